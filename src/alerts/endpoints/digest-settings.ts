import { z } from 'zod';
import { IANAZone } from '../../core/luxon.js';
import { Types, type Connection } from 'mongoose';
import { OBJECT_ID_RE } from '../../db/mongo.js';
import { DELIVERY_MODES, endpointModel, type DeliveryMode, type QuietHours } from '../../models/endpoint.js';
import type { Endpoint } from './endpoint.js';

/**
 * How an endpoint takes its alerts (PATCH /api/webhooks/{id}): `instant`, or gathered in one
 * digest `hourly` or `daily` at `digest_at`, and its quiet hours, all in the account's time zone
 * (PATCH /api/me). The times the digests go are in src/alerts/deliveries/digest-schedule.ts.
 */

/** A local time of day, `HH:MM` on the 24-hour clock. */
export const clockTimeSchema = z
  .string()
  .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day as HH:MM (00:00 to 23:59)')
  .meta({ example: '09:00' });

/** An IANA zone name luxon (and Intl) knows; an offset or an abbreviation is not one. */
export const ianaZoneSchema = z
  .string()
  .max(100)
  .refine(
    (zone) => /^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(zone) && IANAZone.isValidZone(zone),
    'must be an IANA time zone such as Asia/Tokyo',
  )
  .meta({ example: 'Asia/Tokyo' });

export const quietHoursSchema = z
  .strictObject({ start: clockTimeSchema, end: clockTimeSchema })
  .refine((q) => q.start !== q.end, { message: 'must end at another time than it starts', path: ['end'] })
  .meta({ id: 'QuietHours', description: 'From start (included) to end (excluded), local times; across midnight when end is earlier.' });

/** What PATCH /api/webhooks/{id} takes: any of the three, the others kept. */
export const digestSettingsInputSchema = z.object({
  delivery: z.enum(DELIVERY_MODES).optional(),
  digest_at: clockTimeSchema.nullable().optional(),
  quiet_hours: quietHoursSchema.nullable().optional(),
});
export type DigestSettingsInput = z.output<typeof digestSettingsInputSchema>;

/** An endpoint's settings, as the schedule reads them. */
export interface DigestSettings {
  readonly delivery: DeliveryMode;
  readonly digest_at: string | null;
  readonly quiet_hours: QuietHours | null;
}

export function digestSettingsOf(e: Pick<Endpoint, 'delivery' | 'digest_at' | 'quiet_hours'>): DigestSettings {
  const quiet = e.quiet_hours && e.quiet_hours.start && e.quiet_hours.end ? { start: e.quiet_hours.start, end: e.quiet_hours.end } : null;
  return { delivery: e.delivery ?? 'instant', digest_at: e.digest_at ?? null, quiet_hours: quiet };
}

/**
 * The settings after `input`, or the field that makes them incoherent and why: a daily digest
 * needs its time, and only a daily digest has one.
 */
export function mergedSettings(current: DigestSettings, input: DigestSettingsInput): DigestSettings | { field: string; message: string } {
  const delivery = input.delivery ?? current.delivery;
  const digestAt = input.digest_at !== undefined ? input.digest_at : delivery === 'daily' ? current.digest_at : null;
  if (delivery === 'daily' && digestAt === null)
    return { field: 'digest_at', message: 'The digest at field is required when delivery is daily.' };
  if (delivery !== 'daily' && digestAt !== null) return { field: 'digest_at', message: 'The digest at field is only for delivery daily.' };
  const quiet = input.quiet_hours !== undefined ? input.quiet_hours : current.quiet_hours;
  return { delivery, digest_at: digestAt, quiet_hours: quiet };
}

/** Stores the account's endpoint's settings; null when the account has no such endpoint. */
export async function saveDigestSettings(
  conn: Connection,
  userId: Types.ObjectId,
  id: string,
  settings: DigestSettings,
): Promise<Endpoint | null> {
  if (!OBJECT_ID_RE.test(id)) return null;
  return endpointModel(conn)
    .findOneAndUpdate(
      { _id: new Types.ObjectId(id), user_id: userId },
      { $set: { delivery: settings.delivery, digest_at: settings.digest_at, quiet_hours: settings.quiet_hours } },
      { returnDocument: 'after' },
    )
    .lean();
}
