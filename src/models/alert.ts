import { Schema, type Connection, type HydratedDocument, type Model, type Types } from 'mongoose';
import type { Country } from '../core/identifiers.js';

export const ALERT_KINDS = [
  'price_below',
  'price_drop',
  'price_rise',
  'back_in_stock',
  'out_of_stock',
  'buybox_change',
  'rank_below',
  'rank_above',
  'any_change',
] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/** What price_drop and price_rise compare the new price against (src/alerts/rules/triggers.ts). */
export const ALERT_REFERENCES = ['previous', 'lowest', 'highest', 'at_creation'] as const;
export type AlertReference = (typeof ALERT_REFERENCES)[number];

/**
 * Where an alert's deliveries go: the signed generic webhook, a chat service (its incoming webhook,
 * an ntfy topic, a Telegram bot: src/alerts/deliveries/channels/), or e-mail through the operator's
 * SMTP server.
 */
export const ALERT_CHANNELS = ['webhook', 'slack', 'discord', 'teams', 'email', 'ntfy', 'telegram'] as const;
export type AlertChannel = (typeof ALERT_CHANNELS)[number];
/**
 * The chat services: their target carries a credential (a hook URL, an ntfy topic and token, a
 * Telegram bot token), so it is kept sealed.
 */
export const CHAT_CHANNELS = ['slack', 'discord', 'teams', 'ntfy', 'telegram'] as const;
export type ChatChannel = (typeof CHAT_CHANNELS)[number];

export function isChatChannel(channel: AlertChannel): channel is ChatChannel {
  return (CHAT_CHANNELS as readonly string[]).includes(channel);
}

/** The unique index that makes identical alerts one: per account, country, ASIN, kind and identity. */
export const ALERT_IDENTITY_INDEX = 'alert_identity';
/** The unique index of the places an account's alerts take on one product (ACCOUNT_MAX_ALERTS_PER_PRODUCT). */
export const ALERT_SLOT_INDEX = 'alert_product_slot';

/**
 * An account's alert on one product in one country: when a refresh sees the change it describes, a
 * signed webhook goes to its endpoint (`endpoint_id`, the account's endpoint for `webhook_url`),
 * which holds the signing secret. An account may hold several alerts on one product and kind that
 * differ in their firing options or target (`identity`), at most ACCOUNT_MAX_ALERTS_PER_PRODUCT
 * on one product (`slot`).
 *
 * Alerts stored before endpoints existed have no `endpoint_id` and a secret of their own
 * (`secret_sealed`); they move to an endpoint the first time they are needed (src/alerts/endpoints/endpoints.ts).
 */
export interface AlertFields {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  asin: string;
  country: Country;
  kind: AlertKind;
  /**
   * A hash of the firing options and the endpoint's key (src/alerts/rules/identity.ts): two alerts of an
   * account with the same product, kind and identity are the same alert. Absent only on an alert
   * stored before several alerts per kind, until the start-up migration fills it (src/alerts/rules/migrate.ts).
   */
  identity?: string;
  /**
   * The alert's place among its account's alerts on the product, from 0 and below
   * ACCOUNT_MAX_ALERTS_PER_PRODUCT (when that is set): unique, so concurrent creations cannot
   * pass the cap. Absent only on an alert stored before, until the migration fills it.
   */
  slot?: number;
  /** price_below: the threshold in minor units. */
  price: number | null;
  /** rank_below / rank_above: the sales rank the alert watches the product cross (absent on older alerts). */
  rank?: number | null;
  /** price_drop / price_rise: the least move against the last point, in percent (or `amount`). */
  percent: number | null;
  /** price_drop / price_rise: the least move against the last point, in minor units (or `percent`). Absent on older alerts. */
  amount?: number | null;
  /** price_drop / price_rise: against what (absent: previous, the point before). */
  reference?: AlertReference;
  /** reference lowest / highest: over the product's points of this many days before the change. */
  days?: number | null;
  /** reference at_creation: the product's price (and currency) when the alert was posted; null until one is known. */
  reference_price?: number | null;
  reference_currency?: string | null;
  /** A paused alert fires nothing; it keeps its options. Absent on older alerts: not paused. */
  paused?: boolean;
  /**
   * price_below: after a firing, the price must be at least `price + rearm_above` (minor units)
   * before the alert can fire again. null: back at or above `price` re-arms it (as before).
   */
  rearm_above?: number | null;
  /** price_below: no second firing within this long of the last (as posted, e.g. "6h"), and in ms. */
  rearm_after?: string | null;
  rearm_after_ms?: number | null;
  /**
   * Re-arming state, kept only for an alert with `rearm_above` or `rearm_after`: whether it may
   * fire, when it last fired (the point's time) and the change that fired it (a retried batch
   * that sees the same change fires it again, and the job id makes it one delivery).
   */
  armed?: boolean;
  last_fired_at?: Date | null;
  last_fired_key?: string | null;
  /** Absent on alerts of before channels: webhook. */
  channel?: AlertChannel;
  /**
   * Where it delivers, as answers show it: a webhook's URL; a chat webhook's URL redacted (the URL
   * itself is sealed on the endpoint, never stored in the clear); `mailto:` and the address for e-mail.
   */
  webhook_url: string;
  /** null (or absent) only on an alert stored before endpoints existed and not yet moved to one. */
  endpoint_id?: Types.ObjectId | null;
  /** Only on an alert stored before endpoints existed: its own secret, sealed under APP_KEY. */
  secret_sealed?: string;
  /**
   * A 410 Gone disables the endpoint, not the alert: this is set only on alerts stored before
   * endpoints existed, which a 410 disabled one by one. Cleared when the alert is posted again.
   */
  disabled_at: Date | null;
  disabled_reason: string | null;
  last_delivery_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const alertSchema = new Schema<AlertFields>(
  {
    user_id: { type: Schema.Types.ObjectId, required: true },
    asin: { type: String, required: true },
    country: { type: String, required: true },
    kind: { type: String, enum: ALERT_KINDS, required: true },
    identity: { type: String },
    slot: { type: Number },
    price: { type: Number, default: null },
    percent: { type: Number, default: null },
    rank: { type: Number, default: null },
    amount: { type: Number, default: null },
    reference: { type: String, enum: ALERT_REFERENCES, default: 'previous' },
    days: { type: Number, default: null },
    reference_price: { type: Number, default: null },
    reference_currency: { type: String, default: null },
    paused: { type: Boolean, default: false },
    rearm_above: { type: Number, default: null },
    rearm_after: { type: String, default: null },
    rearm_after_ms: { type: Number, default: null },
    armed: { type: Boolean, default: true },
    last_fired_at: { type: Date, default: null },
    last_fired_key: { type: String, default: null },
    channel: { type: String, enum: ALERT_CHANNELS, default: 'webhook' },
    webhook_url: { type: String, required: true },
    endpoint_id: { type: Schema.Types.ObjectId, default: null },
    secret_sealed: { type: String, select: false },
    disabled_at: { type: Date, default: null },
    disabled_reason: { type: String, default: null },
    last_delivery_at: { type: Date, default: null },
  },
  { collection: 'alerts', versionKey: false, strict: 'throw', timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' } },
);

// An account's list, newest first; and its count, which seeds the account's alert counter.
alertSchema.index({ user_id: 1, created_at: -1, _id: -1 });
// The alerts on a batch's changed products: one query per batch that changed something.
alertSchema.index({ country: 1, asin: 1 });
// Identical alerts are one: a second POST of the same alert updates the first.
alertSchema.index({ user_id: 1, country: 1, asin: 1, kind: 1, identity: 1 }, { unique: true, name: ALERT_IDENTITY_INDEX });
// An account's places on a product: one alert each. Partial, so an alert not yet migrated takes none.
alertSchema.index(
  { user_id: 1, country: 1, asin: 1, slot: 1 },
  { unique: true, name: ALERT_SLOT_INDEX, partialFilterExpression: { slot: { $exists: true } } },
);
// An endpoint's alerts; and an account's alerts still to move to an endpoint (endpoint_id null).
alertSchema.index({ user_id: 1, endpoint_id: 1 });

export type AlertModel = Model<AlertFields>;
export type AlertDoc = HydratedDocument<AlertFields>;

export function alertModel(conn: Connection): AlertModel {
  return (conn.models.Alert as AlertModel | undefined) ?? conn.model<AlertFields>('Alert', alertSchema);
}
