import { z } from 'zod';
import { countrySchema } from '../../core/identifiers.js';
import { dateTimeTextSchema as dateText, formatDateTime, formatNullableDateTime } from '../../core/dates.js';
import { ALERT_CHANNELS, ALERT_KINDS, ALERT_REFERENCES } from '../../models/alert.js';
import { EMAIL_STATES, type EmailState } from '../../models/email-address.js';
import type { AlertView } from './alert.js';
import { addressOf } from '../endpoints/target.js';

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
      description:
        'Where deliveries go: webhook (signed generic webhook), slack, discord, teams (their incoming webhooks), ntfy (a topic), telegram (a bot and a chat) or email.',
    }),
    webhook_url: z.string().nullable().meta({
      description:
        "The webhook's URL; for slack, discord, teams and ntfy the URL redacted (it is a credential, kept sealed: scheme, host and its last four characters); for telegram `telegram:bot<bot id>/…<the chat id's last four characters>` (the bot token is never shown); null for email.",
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
