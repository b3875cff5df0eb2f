import { Schema, type Connection, type Model, type Types } from 'mongoose';

/**
 * Where one account's webhooks go: one per (account, URL), whatever number of alerts use it. The
 * endpoint holds the signing secret (sealed under APP_KEY, as alerts held theirs before) and the
 * delivery health that decides whether it still gets deliveries.
 */
export interface WebhookEndpointFields {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  /** The URL as webhookUrlSchema normalised it (`URL.href`), so one receiver is one endpoint. */
  url: string;
  /** The `whsec_` secret that signs every delivery, sealed. */
  secret_sealed: string;
  /**
   * Secrets of alerts made before endpoints existed, sealed, when they differ from `secret_sealed`:
   * deliveries carry a signature under each, so a receiver set up with any of them still verifies.
   */
  legacy_secrets_sealed: string[];
  /** Set when deliveries stopped: a 410 Gone, or failures for longer than WEBHOOK_DISABLE_AFTER. */
  disabled_at: Date | null;
  disabled_reason: string | null;
  /** The first failed attempt since the last success; null while healthy. */
  failing_since: Date | null;
  last_success_at: Date | null;
  /**
   * Delivery records written since the last count, plus what that count found: the cheap check that
   * says when to trim to WEBHOOK_RECORDS_PER_ENDPOINT. Records the TTL removed are not subtracted,
   * so it can only run high, which costs one needless count.
   */
  record_count: number;
  created_at: Date;
  updated_at: Date;
}

export const webhookEndpointSchema = new Schema<WebhookEndpointFields>(
  {
    user_id: { type: Schema.Types.ObjectId, required: true },
    url: { type: String, required: true },
    secret_sealed: { type: String, required: true, select: false },
    legacy_secrets_sealed: { type: [String], default: [], select: false },
    disabled_at: { type: Date, default: null },
    disabled_reason: { type: String, default: null },
    failing_since: { type: Date, default: null },
    last_success_at: { type: Date, default: null },
    record_count: { type: Number, default: 0 },
  },
  {
    collection: 'webhook_endpoints',
    versionKey: false,
    strict: 'throw',
    timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' },
  },
);

// One endpoint per account and URL: concurrent alert creations on one URL meet here.
webhookEndpointSchema.index({ user_id: 1, url: 1 }, { unique: true });
// An account's list, newest first.
webhookEndpointSchema.index({ user_id: 1, created_at: -1, _id: -1 });

export type WebhookEndpointModel = Model<WebhookEndpointFields>;

export function webhookEndpointModel(conn: Connection): WebhookEndpointModel {
  return (
    (conn.models.WebhookEndpoint as WebhookEndpointModel | undefined) ??
    conn.model<WebhookEndpointFields>('WebhookEndpoint', webhookEndpointSchema)
  );
}
