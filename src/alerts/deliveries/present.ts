import { z } from 'zod';
import { countrySchema } from '../../core/identifiers.js';
import { historyPointRecordSchema, presentPoint } from '../../catalog/history.js';
import { dateTimeTextSchema as dateText, formatDateTime, formatNullableDateTime } from '../../core/dates.js';
import { ALERT_KINDS } from '../../models/alert.js';
import { DELIVERY_STATUSES } from '../../models/delivery.js';
import type { DeliveryRecord } from './records.js';
import type { DeliveryContent, DigestContent, PayloadPoint } from './payload.js';

/** A webhook's sequence number: 1, 2, 3… per alert and product; 0 on a test delivery. */
const sequenceSchema = z.number().int().nonnegative();

const firedAlertSchema = z
  .object({
    id: z.string(),
    kind: z.enum(ALERT_KINDS),
    sequence: sequenceSchema.optional().meta({
      description:
        "This alert's event number for the product: 1 for its first, then one more per event; the same on every retry and replay. 0 on a test delivery; absent on deliveries queued before numbers existed.",
    }),
  })
  .meta({ id: 'FiredAlert' });

export const deliveryRecordSchema = z
  .object({
    id: z.string().meta({ description: "The delivery's webhook-id: the same on every attempt and every replay." }),
    status: z.enum(DELIVERY_STATUSES),
    endpoint_id: z.string().nullable().meta({ description: 'null for a delivery of before endpoints.' }),
    alert_ids: z.array(z.string()).meta({ description: 'The alerts the change fired at the endpoint.' }),
    attempts: z.number().int().meta({ description: 'Attempts since it was queued (or last replayed).' }),
    replays: z.number().int(),
    response_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: dateText,
    delivered_at: dateText.nullable(),
  })
  .meta({ id: 'Delivery' });

/** The body of a webhook: the alerts the change fired, the product, and the points before and after it. */
export const webhookPayloadSchema = z
  .object({
    alert_id: z.string().meta({ description: 'The first alert the change fired (alerts[0].id).' }),
    kind: z.enum(ALERT_KINDS).meta({ description: "That alert's kind." }),
    alerts: z.array(firedAlertSchema).meta({
      description:
        'Every alert of the account on this endpoint that the change fired, in creation order: several may share a kind (an account may hold several alerts of one kind on a product, e.g. two price_below thresholds to one URL, and a change under both fires both in this one delivery).',
    }),
    sequence: sequenceSchema.optional().meta({
      description:
        "alerts[0].sequence: the first alert's event number for this product (alert_id, asin, country), assigned once when the event was queued, so retries and replays carry the same number. A receiver processes an event only when its number is above the last it processed for that alert and product (drops stale and replayed ones). 0 on a test delivery (POST /api/alerts/{id}/test), which therefore never counts as processed; absent on deliveries queued before numbers existed.",
    }),
    test: z
      .literal(true)
      .optional()
      .meta({ description: 'Only on a test delivery (POST /api/alerts/{id}/test): a sample, not an observed change.' }),
    asin: z.string(),
    country: countrySchema,
    before: historyPointRecordSchema.nullable(),
    after: historyPointRecordSchema,
  })
  .meta({ id: 'WebhookPayload' });

export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;

/**
 * The webhook's body: the first alert (as before endpoints), every alert fired with its sequence
 * number, and the points as the history route answers them. A delivery queued before numbers
 * existed has none, and its body stays what it was.
 */
export function webhookBody(content: DeliveryContent, timeZone: string, opts: { test?: boolean } = {}): WebhookPayload {
  const point = (p: PayloadPoint) => presentPoint({ ...p, at: new Date(p.at) }, timeZone);
  const first = content.alerts[0]!;
  const numbered = (sequence: number | undefined) => (sequence === undefined ? {} : { sequence });
  return {
    alert_id: first.id,
    kind: first.kind,
    alerts: content.alerts.map((a) => ({ id: a.id, kind: a.kind, ...numbered(a.sequence) })),
    ...numbered(first.sequence),
    ...(opts.test ? { test: true as const } : {}),
    asin: content.asin,
    country: content.country,
    before: content.before ? point(content.before) : null,
    after: point(content.after),
  };
}

/** The body of a digest: every delivery held for the window, as its own webhook's body, newest first. */
export const digestWebhookPayloadSchema = z
  .object({
    type: z.literal('digest'),
    endpoint_id: z.string(),
    count: z.number().int().positive().meta({ description: 'How many alerts deliveries the digest lists.' }),
    window_end: dateText.meta({
      description: 'When the window it is sent for closed: the hour, the daily time, or the end of quiet hours.',
    }),
    alerts: z.array(webhookPayloadSchema.extend({ fired_at: dateText })).meta({
      description: "Each held delivery's webhook body as it would have been sent at once, with when it fired; newest first.",
    }),
  })
  .meta({ id: 'DigestWebhookPayload' });

export type DigestWebhookPayload = z.infer<typeof digestWebhookPayloadSchema>;

export function digestWebhookBody(content: DigestContent, timeZone: string): DigestWebhookPayload {
  const { endpoint_id, user_id } = content;
  return {
    type: 'digest',
    endpoint_id,
    count: content.items.length,
    window_end: formatDateTime(new Date(content.due_at), timeZone),
    alerts: content.items.map(({ fired_at, ...item }) => ({
      ...webhookBody({ ...item, endpoint_id, user_id }, timeZone),
      fired_at: formatDateTime(new Date(fired_at), timeZone),
    })),
  };
}

export function presentDelivery(d: DeliveryRecord, timeZone: string): z.infer<typeof deliveryRecordSchema> {
  return {
    id: d._id,
    status: d.status,
    endpoint_id: d.endpoint_id?.toHexString() ?? null,
    alert_ids: (d.alert_ids ?? [d.alert_id]).map((id) => id.toHexString()),
    attempts: d.attempts,
    replays: d.replays ?? 0,
    response_code: d.response_code,
    last_error: d.last_error,
    created_at: formatDateTime(d.created_at, timeZone),
    delivered_at: formatNullableDateTime(d.delivered_at, timeZone),
  };
}
