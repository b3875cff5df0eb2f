import { z } from 'zod';
import { dateTimeTextSchema as dateText, formatDateTime, formatNullableDateTime } from '../../core/dates.js';
import { ALERT_CHANNELS } from '../../models/alert.js';
import { ACCOUNT_EVENT_TYPES } from '../../models/account-event.js';
import { channelOf, endpointState, shownUrl, type Endpoint } from './endpoint.js';
import type { AccountEvent } from './events.js';
import { DELIVERY_MODES } from '../../models/endpoint.js';
import { digestSettingsOf, quietHoursSchema } from './digest-settings.js';

export const endpointRecordSchema = z
  .object({
    id: z.string(),
    channel: z.enum(ALERT_CHANNELS),
    url: z.string().meta({
      description:
        "The webhook's URL; a chat webhook's or ntfy topic's URL redacted (scheme, host and its last four characters); telegram:bot<bot id>/…<the chat id's last four characters> for telegram; mailto:address for email.",
    }),
    state: z.enum(['active', 'failing', 'disabled']).meta({
      description: 'disabled: no deliveries until POST /api/webhooks/{id}/enable; failing: the last attempt failed; else active.',
    }),
    failing_since: dateText.nullable().meta({ description: 'The first failed attempt since the last success.' }),
    disabled_at: dateText.nullable(),
    disabled_reason: z.string().nullable(),
    last_success_at: dateText.nullable(),
    delivery: z.enum(DELIVERY_MODES).meta({
      description: 'instant: each alert as it fires; hourly / daily: one digest of every alert fired since the last (docs/alerts.md).',
    }),
    digest_at: z.string().nullable().meta({ description: "A daily digest's time, HH:MM in the account's time zone; null unless daily." }),
    quiet_hours: quietHoursSchema.nullable().meta({
      description: "Alerts firing within them are held and sent in one digest at their end; in the account's time zone.",
    }),
    created_at: dateText,
  })
  .meta({ id: 'WebhookEndpoint' });

export const accountEventRecordSchema = z
  .object({
    id: z.string(),
    type: z.enum(ACCOUNT_EVENT_TYPES),
    endpoint_id: z.string(),
    url: z.string(),
    reason: z.string(),
    at: dateText,
  })
  .meta({ id: 'AccountEvent' });

export function presentEndpoint(e: Endpoint, timeZone: string): z.infer<typeof endpointRecordSchema> {
  return {
    id: e._id.toHexString(),
    channel: channelOf(e),
    url: shownUrl(e),
    state: endpointState(e),
    failing_since: formatNullableDateTime(e.failing_since, timeZone),
    disabled_at: formatNullableDateTime(e.disabled_at, timeZone),
    disabled_reason: e.disabled_reason,
    last_success_at: formatNullableDateTime(e.last_success_at, timeZone),
    ...digestSettingsOf(e),
    created_at: formatDateTime(e.created_at, timeZone),
  };
}

export function presentEvent(e: AccountEvent, timeZone: string): z.infer<typeof accountEventRecordSchema> {
  return {
    id: e._id.toHexString(),
    type: e.type,
    endpoint_id: e.endpoint_id.toHexString(),
    url: e.url,
    reason: e.reason,
    at: formatDateTime(e.at, timeZone),
  };
}
