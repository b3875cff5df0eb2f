import { Schema, type Connection, type Model, type Types } from 'mongoose';
import { ALERT_CHANNELS, type AlertChannel } from './alert.js';

/** How an endpoint takes its alerts: each as it fires, or gathered in one digest an hour or a day. */
export const DELIVERY_MODES = ['instant', 'hourly', 'daily'] as const;
export type DeliveryMode = (typeof DELIVERY_MODES)[number];

/** A daily span in the account's time zone, `HH:MM` to `HH:MM` (across midnight when the end is earlier). */
export interface QuietHours {
  start: string;
  end: string;
}

/**
 * Where one account's deliveries go: one per (account, channel, target), whatever number of alerts
 * use it. The endpoint holds what reaching the target takes, sealed under APP_KEY (a webhook's
 * signing secret, a chat webhook's URL) and the delivery health that decides whether it still gets
 * deliveries, the same for every channel.
 */
export interface EndpointFields {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  /** Absent on endpoints of before channels: webhook. */
  channel?: AlertChannel;
  /**
   * The endpoint's key, unique per account: a webhook's URL as targetUrlSchema normalised it
   * (`URL.href`), so one receiver is one endpoint; `mailto:` and the address for e-mail; for a chat
   * channel `<channel>:` and a keyed hash of its URL (src/alerts/endpoints/target.ts), never the URL.
   */
  url: string;
  /** A chat channel's webhook URL, sealed: the URL is the credential. */
  target_sealed?: string;
  /** A chat channel's URL as answers show it, redacted; absent when `url` is what they show. */
  shown_url?: string;
  /** The `whsec_` secret that signs every delivery, sealed; only the generic webhook signs. */
  secret_sealed?: string;
  /**
   * Secrets of alerts made before endpoints existed, sealed, when they differ from `secret_sealed`:
   * deliveries carry a signature under each, so a receiver set up with any of them still verifies.
   */
  legacy_secrets_sealed: string[];
  /** Set when deliveries stopped: a 410 Gone, or failures for longer than ENDPOINT_DISABLE_AFTER. */
  disabled_at: Date | null;
  disabled_reason: string | null;
  /** The first failed attempt since the last success; null while healthy. */
  failing_since: Date | null;
  last_success_at: Date | null;
  /**
   * Delivery records written since the last count, plus what that count found: the cheap check that
   * says when to trim to DELIVERY_RECORDS_PER_ENDPOINT. Records the TTL removed are not subtracted,
   * so it can only run high, which costs one needless count.
   */
  record_count: number;
  /**
   * Set while a removal checks that no alert uses the endpoint (src/alerts/endpoints/endpoints.ts, `retire`):
   * the remover's token, an ObjectId, so its time tells a removal that died from one under way.
   * An alert attached meanwhile clears it, and the removal then deletes nothing.
   */
  retiring?: Types.ObjectId | null;
  /** Absent on endpoints of before digests: instant. */
  delivery?: DeliveryMode;
  /** A daily digest's local time, `HH:MM`; null unless daily. */
  digest_at?: string | null;
  /** Deliveries that fire within it are held, and sent in one digest when it ends. */
  quiet_hours?: QuietHours | null;
  created_at: Date;
  updated_at: Date;
}

export const endpointSchema = new Schema<EndpointFields>(
  {
    user_id: { type: Schema.Types.ObjectId, required: true },
    channel: { type: String, enum: ALERT_CHANNELS, default: 'webhook' },
    url: { type: String, required: true },
    target_sealed: { type: String, select: false },
    shown_url: { type: String },
    secret_sealed: { type: String, select: false },
    legacy_secrets_sealed: { type: [String], default: [], select: false },
    disabled_at: { type: Date, default: null },
    disabled_reason: { type: String, default: null },
    failing_since: { type: Date, default: null },
    last_success_at: { type: Date, default: null },
    record_count: { type: Number, default: 0 },
    retiring: { type: Schema.Types.ObjectId, default: null },
    delivery: { type: String, enum: DELIVERY_MODES, default: 'instant' },
    digest_at: { type: String, default: null },
    quiet_hours: { type: new Schema<QuietHours>({ start: String, end: String }, { _id: false }), default: null },
  },
  {
    collection: 'webhook_endpoints',
    versionKey: false,
    strict: 'throw',
    timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' },
  },
);

// One endpoint per account and key (channel and target): concurrent alert creations on one target meet here.
endpointSchema.index({ user_id: 1, url: 1 }, { unique: true });
// An account's list, newest first.
endpointSchema.index({ user_id: 1, created_at: -1, _id: -1 });

export type EndpointModel = Model<EndpointFields>;

export function endpointModel(conn: Connection): EndpointModel {
  return (conn.models.Endpoint as EndpointModel | undefined) ?? conn.model<EndpointFields>('Endpoint', endpointSchema);
}
