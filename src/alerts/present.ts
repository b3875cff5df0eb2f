import { z } from 'zod';
import { countrySchema } from '../core/identifiers.js';
import { historyPointRecordSchema, presentPoint } from '../catalog/history.js';
import { dateTimeTextSchema as dateText, formatDateTime, formatNullableDateTime } from '../core/dates.js';
import { ALERT_CHANNELS, ALERT_KINDS, ALERT_REFERENCES } from '../models/alert.js';
import { DELIVERY_STATUSES } from '../models/delivery.js';
import { ACCOUNT_EVENT_TYPES } from '../models/account-event.js';
import { EMAIL_STATES, type EmailState } from '../models/email-address.js';
import type { AlertView } from './service.js';
import { channelOf, endpointState, shownUrl, type Endpoint } from './endpoints.js';
import { addressOf } from './channels/target.js';
import type { DeliveryRecord } from './delivery-records.js';
import type { AccountEvent } from './events.js';
import type { DeliveryContent, PayloadPoint } from './delivery-queue.js';

export const alertRecordSchema = z
  .object({
    id: z.string(),
    asin: z.string(),
    country: countrySchema,
    kind: z.enum(ALERT_KINDS),
    price: z.number().int().nullable().meta({ description: 'price_below: the threshold in minor units.' }),
    rank: z.number().int().nullable().meta({ description: 'rank_below / rank_above: the sales rank watched.' }),
    percent: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'price_drop / price_rise: the least move against the last point, in percent; null when by amount.' }),
    amount: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'price_drop / price_rise: the least move against the last point, in minor units; null when by percent.' }),
    reference: z.enum(ALERT_REFERENCES).nullable().meta({
      description:
        'price_drop / price_rise: what the price is compared against (previous, lowest, highest, at_creation); null for other kinds.',
    }),
    days: z.number().int().nullable().meta({ description: 'reference lowest / highest: the window in days.' }),
    reference_price: z.number().int().nullable().meta({
      description: 'reference at_creation: the price taken when the alert was posted (or the first seen after); else null.',
    }),
    rearm_above: z.number().int().nullable().meta({
      description: 'price_below: after firing, fires again only once a point is at or above price + rearm_above; null: at or above price.',
    }),
    rearm_after: z
      .string()
      .nullable()
      .meta({ description: 'price_below: no second firing within this long of the last (e.g. "6h"); null: no such wait.' }),
    paused: z.boolean().meta({ description: 'true: the alert fires nothing until resumed (PATCH /api/alerts/{id}).' }),
    channel: z.enum(ALERT_CHANNELS).meta({
      description: 'Where deliveries go: webhook (signed generic webhook), slack, discord, teams (their incoming webhooks) or email.',
    }),
    webhook_url: z.string().nullable().meta({
      description:
        "The webhook's URL; for slack, discord and teams the URL redacted (it is a credential, kept sealed: scheme, host and its last four characters); null for email.",
    }),
    email: z.string().nullable().meta({ description: 'channel email: the address; else null.' }),
    email_status: z.enum(EMAIL_STATES).nullable().meta({
      description:
        "channel email: where the address stands with this account. pending: a confirmation link was mailed to it (at most one a day); nothing else is mailed to it until its owner opens the link and presses Confirm. confirmed: alert and test mails go to it. unsubscribed: its owner used a mail's unsubscribe link (List-Unsubscribe, RFC 8058). bounced: its mail server refused mail permanently EMAIL_BOUNCE_LIMIT times in a row. Posting the alert again mails an address not confirmed a new confirmation link; only its owner's confirmation makes it confirmed. null for the other channels.",
    }),
    endpoint_id: z.string().nullable().meta({
      description: 'The endpoint it delivers to (GET /api/webhooks); null for an alert of before endpoints not yet moved to one.',
    }),
    active: z.boolean().meta({ description: 'false while its endpoint is disabled (a 410 Gone, or failures for ENDPOINT_DISABLE_AFTER).' }),
    disabled_reason: z.string().nullable(),
    last_delivery_at: dateText.nullable(),
    created_at: dateText,
  })
  .meta({ id: 'Alert' });
export type AlertRecord = z.infer<typeof alertRecordSchema>;

/** Creation's answer: the alert and its endpoint's signing secret. */
export const createdAlertSchema = alertRecordSchema
  .extend({
    secret: z.string().nullable().meta({
      description:
        "channel webhook: the signing secret (Standard Webhooks, whsec_…) of the account's endpoint for webhook_url, the same for every alert of the account on that URL. null for the other channels, which are not signed.",
    }),
  })
  .meta({ id: 'CreatedAlert' });

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

export const webhookEndpointRecordSchema = z
  .object({
    id: z.string(),
    channel: z.enum(ALERT_CHANNELS),
    url: z.string().meta({
      description:
        "The webhook's URL; a chat webhook's URL redacted (scheme, host and its last four characters); mailto:address for email.",
    }),
    state: z.enum(['active', 'failing', 'disabled']).meta({
      description: 'disabled: no deliveries until POST /api/webhooks/{id}/enable; failing: the last attempt failed; else active.',
    }),
    failing_since: dateText.nullable().meta({ description: 'The first failed attempt since the last success.' }),
    disabled_at: dateText.nullable(),
    disabled_reason: z.string().nullable(),
    last_success_at: dateText.nullable(),
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

/** `emailStatus`: the address's state for an e-mail alert (EmailAddresses.statusesFor); null when not known. */
export function presentAlert({ alert: a, endpoint }: AlertView, timeZone: string, emailStatus: EmailState | null = null): AlertRecord {
  const channel = a.channel ?? 'webhook';
  return {
    id: a._id.toHexString(),
    asin: a.asin,
    country: a.country,
    kind: a.kind,
    price: a.price,
    rank: a.rank ?? null,
    percent: a.percent,
    amount: a.amount ?? null,
    reference: a.kind === 'price_drop' || a.kind === 'price_rise' ? (a.reference ?? 'previous') : null,
    days: a.days ?? null,
    reference_price: a.reference === 'at_creation' ? (a.reference_price ?? null) : null,
    rearm_above: a.rearm_above ?? null,
    rearm_after: a.rearm_after ?? null,
    paused: a.paused ?? false,
    channel,
    webhook_url: channel === 'email' ? null : a.webhook_url,
    email: channel === 'email' ? addressOf(a.webhook_url) : null,
    email_status: channel === 'email' ? emailStatus : null,
    endpoint_id: a.endpoint_id?.toHexString() ?? null,
    active: !a.disabled_at && !endpoint?.disabled_at,
    disabled_reason: a.disabled_reason ?? endpoint?.disabled_reason ?? null,
    last_delivery_at: formatNullableDateTime(a.last_delivery_at, timeZone),
    created_at: formatDateTime(a.created_at, timeZone),
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

export function presentEndpoint(e: Endpoint, timeZone: string): z.infer<typeof webhookEndpointRecordSchema> {
  return {
    id: e._id.toHexString(),
    channel: channelOf(e),
    url: shownUrl(e),
    state: endpointState(e),
    failing_since: formatNullableDateTime(e.failing_since, timeZone),
    disabled_at: formatNullableDateTime(e.disabled_at, timeZone),
    disabled_reason: e.disabled_reason,
    last_success_at: formatNullableDateTime(e.last_success_at, timeZone),
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
