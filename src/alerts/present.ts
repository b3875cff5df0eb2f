import { z } from 'zod';
import { countrySchema } from '../catalog/identifiers.js';
import { historyPointRecordSchema } from '../catalog/history.js';
import { dateTimeTextSchema as dateText, formatDateTime, formatNullableDateTime } from '../dates.js';
import { ALERT_KINDS, type AlertFields } from '../models/alert.js';
import { DELIVERY_STATUSES, type DeliveryFields } from '../models/delivery.js';

export const alertRecordSchema = z
  .object({
    id: z.string(),
    asin: z.string(),
    country: countrySchema,
    kind: z.enum(ALERT_KINDS),
    price: z.number().int().nullable().meta({ description: 'price_below: the threshold in minor units.' }),
    percent: z.number().int().nullable().meta({ description: 'price_drop: the least drop against the last point, in percent.' }),
    webhook_url: z.string(),
    active: z.boolean().meta({ description: 'false once the receiver answered 410 Gone.' }),
    disabled_reason: z.string().nullable(),
    last_delivery_at: dateText.nullable(),
    created_at: dateText,
  })
  .meta({ id: 'Alert' });
export type AlertRecord = z.infer<typeof alertRecordSchema>;

/** Creation's answer: the alert and, this once, its signing secret. */
export const createdAlertSchema = alertRecordSchema
  .extend({ secret: z.string().meta({ description: 'The webhook signing secret (Standard Webhooks, whsec_…). Shown only here.' }) })
  .meta({ id: 'CreatedAlert' });

export const deliveryRecordSchema = z
  .object({
    id: z.string().meta({ description: "The delivery's webhook-id: the same on every attempt." }),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    response_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: dateText,
    delivered_at: dateText.nullable(),
  })
  .meta({ id: 'Delivery' });

/** The body of a webhook: the alert, the product, and the points before and after the change. */
export const webhookPayloadSchema = z
  .object({
    alert_id: z.string(),
    kind: z.enum(ALERT_KINDS),
    asin: z.string(),
    country: countrySchema,
    before: historyPointRecordSchema.nullable(),
    after: historyPointRecordSchema,
  })
  .meta({ id: 'WebhookPayload' });
export type WebhookPayload = z.infer<typeof webhookPayloadSchema>;

export function presentAlert(a: Omit<AlertFields, 'secret_sealed'>, timeZone: string): AlertRecord {
  return {
    id: a._id.toHexString(),
    asin: a.asin,
    country: a.country,
    kind: a.kind,
    price: a.price,
    percent: a.percent,
    webhook_url: a.webhook_url,
    active: a.disabled_at === null,
    disabled_reason: a.disabled_reason,
    last_delivery_at: formatNullableDateTime(a.last_delivery_at, timeZone),
    created_at: formatDateTime(a.created_at, timeZone),
  };
}

export function presentDelivery(d: DeliveryFields, timeZone: string): z.infer<typeof deliveryRecordSchema> {
  return {
    id: d._id,
    status: d.status,
    attempts: d.attempts,
    response_code: d.response_code,
    last_error: d.last_error,
    created_at: formatDateTime(d.created_at, timeZone),
    delivered_at: formatNullableDateTime(d.delivered_at, timeZone),
  };
}
