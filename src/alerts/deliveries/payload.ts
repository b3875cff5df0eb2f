import { z } from 'zod';
import { countrySchema } from '../../core/identifiers.js';
import { availabilitySchema } from '../../core/product.js';
import type { ProductChange } from '../../catalog/history.js';
import { ALERT_KINDS } from '../../models/alert.js';
import type { Alert } from '../rules/alert.js';
import type { FairQueue } from '../../fairness/fair-tags.js';
import { OBJECT_ID_RE } from '../../db/mongo.js';

/**
 * What a delivery's job carries, and the port its jobs go through. Producer (service.ts) and worker
 * (the delivery job kind, jobs/deliver.ts) parse the same payload schema.
 */

/** The fair-queuing lane of the deliveries (one for every process and country). */
export const DELIVERIES_LANE = 'deliveries';
/** Deliveries one bulk replay queues at most. */
export const REPLAY_LIMIT = 1_000;

const objectId = z.string().regex(OBJECT_ID_RE);

const pointSchema = z.object({
  at: z.number().int(),
  price: z.number().int().nullable(),
  currency: z.string().nullable(),
  availability: availabilitySchema,
  buybox: z.boolean(),
  rank: z.number().int().nullable(),
});
export type PayloadPoint = z.output<typeof pointSchema>;

/** What a delivery says, as its record keeps it for a replay. */
export const deliveryContentSchema = z.object({
  endpoint_id: objectId,
  user_id: objectId,
  /** The alerts the change fired at the endpoint, in creation order; several may share a kind (other thresholds, same target). */
  alerts: z
    .array(
      z.object({
        id: objectId,
        kind: z.enum(ALERT_KINDS),
        /**
         * What tells alerts of one kind apart in a message to a person (channels/message.ts):
         * price_below's threshold, rank_below / rank_above's rank. Absent on deliveries queued before.
         */
        price: z.number().int().optional(),
        rank: z.number().int().optional(),
        /**
         * The event's number for this alert and product (rules/sequences.ts), assigned when it was queued;
         * absent on deliveries queued before numbers existed.
         */
        sequence: z.number().int().positive().optional(),
      }),
    )
    .min(1),
  asin: z.string(),
  country: countrySchema,
  before: pointSchema.nullable(),
  after: pointSchema,
});
export type DeliveryContent = z.output<typeof deliveryContentSchema>;

/** A job: the content, its fair start tag, and for a replay the delivery it sends again. */
export const deliveryPayloadSchema = deliveryContentSchema.extend({
  tag: z.number().nonnegative(),
  /** A replay's job id differs from the delivery's; this is the delivery's id and webhook-id. */
  delivery_id: z.string().min(1).optional(),
});
export type DeliveryPayload = z.output<typeof deliveryPayloadSchema>;

/** One held delivery in a digest: its content without the endpoint and account the digest names, and when it fired. */
export const digestItemSchema = deliveryContentSchema.omit({ endpoint_id: true, user_id: true }).extend({ fired_at: z.number().int() });
export type DigestItem = z.output<typeof digestItemSchema>;

/** What a digest says: every delivery held for the endpoint's window, newest first (digests.ts). */
export const digestContentSchema = z.object({
  type: z.literal('digest'),
  endpoint_id: objectId,
  user_id: objectId,
  /** The close of the window it is sent for (ms). */
  due_at: z.number().int(),
  items: z.array(digestItemSchema).min(1),
});
export type DigestContent = z.output<typeof digestContentSchema>;

/** A digest's job, as a delivery's: its fair start tag, and for a replay the delivery it sends again. */
export const digestPayloadSchema = digestContentSchema.extend({
  tag: z.number().nonnegative(),
  delivery_id: z.string().min(1).optional(),
});
export type DigestPayload = z.output<typeof digestPayloadSchema>;

/** What a record keeps and a job sends: one change's delivery, or a digest of several. */
export const sentContentSchema = z.union([digestContentSchema, deliveryContentSchema]);
export type SentContent = DeliveryContent | DigestContent;

export function isDigest(content: SentContent): content is DigestContent {
  return 'type' in content && content.type === 'digest';
}

/** Every alert a delivery or digest names, once each. */
export function alertIdsOf(content: SentContent): string[] {
  const alerts = isDigest(content) ? content.items.flatMap((i) => i.alerts) : content.alerts;
  return [...new Set(alerts.map((a) => a.id))];
}

/** A job queued before endpoints existed: one alert, no endpoint, no tag. */
export const legacyPayloadSchema = z.object({
  alert_id: objectId,
  kind: z.enum(ALERT_KINDS),
  asin: z.string(),
  country: countrySchema,
  before: pointSchema.nullable(),
  after: pointSchema,
});
export type LegacyPayload = z.output<typeof legacyPayloadSchema>;

/** One endpoint and one change make one delivery: BullMQ adds a job id once, and the record is keyed by it. */
export function deliveryJobId(endpointId: string, change: Pick<ProductChange, 'key'>): string {
  return `${endpointId}.${change.key}`;
}

/** The option that tells a fired alert from others of its kind, as the delivery's content carries it. */
export function thresholdOf(a: Pick<Alert, 'kind' | 'price' | 'rank'>): { price?: number; rank?: number } {
  if (a.kind === 'price_below' && a.price !== null) return { price: a.price };
  if ((a.kind === 'rank_below' || a.kind === 'rank_above') && typeof a.rank === 'number') return { rank: a.rank };
  return {};
}

/** One delivery's job, as the queue takes it. */
export interface DeliveryJob {
  readonly jobId: string;
  readonly data: DeliveryPayload | DigestPayload;
  readonly priority: number;
}

/** Where deliveries' jobs go: the deliveries' queue (jobs/global-queue.ts). */
export interface DeliveryJobs {
  /** Its waiting jobs, as fair tagging reorders them. */
  readonly waiting: FairQueue;
  addBulk(jobs: readonly DeliveryJob[]): Promise<void>;
}
