import { Schema, type Connection, type HydratedDocument, type Model, type Types } from 'mongoose';
import type { Country } from '../catalog/identifiers.js';

export const ALERT_KINDS = ['price_below', 'price_drop', 'back_in_stock', 'any_change'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/**
 * An account's alert on one product in one country: when a refresh sees the change it describes, a
 * signed webhook goes to `webhook_url`. The signing secret is kept sealed under APP_KEY, as API
 * tokens are: the delivery needs it back, and a database dump alone must not let anyone sign.
 */
export interface AlertFields {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  asin: string;
  country: Country;
  kind: AlertKind;
  /** price_below: the threshold in minor units. */
  price: number | null;
  /** price_drop: the least drop against the last point, in percent. */
  percent: number | null;
  webhook_url: string;
  secret_sealed: string;
  /** Set when the receiver answered 410 Gone: no more deliveries. */
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
    price: { type: Number, default: null },
    percent: { type: Number, default: null },
    webhook_url: { type: String, required: true },
    secret_sealed: { type: String, required: true, select: false },
    disabled_at: { type: Date, default: null },
    disabled_reason: { type: String, default: null },
    last_delivery_at: { type: Date, default: null },
  },
  { collection: 'alerts', versionKey: false, strict: 'throw', timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' } },
);

// An account's list, newest first; and its count for ACCOUNT_MAX_ALERTS.
alertSchema.index({ user_id: 1, created_at: -1, _id: -1 });
// The alerts on a batch's changed products: one query per batch that changed something.
alertSchema.index({ country: 1, asin: 1 });

export type AlertModel = Model<AlertFields>;
export type AlertDoc = HydratedDocument<AlertFields>;

export function alertModel(conn: Connection): AlertModel {
  return (conn.models.Alert as AlertModel | undefined) ?? conn.model<AlertFields>('Alert', alertSchema);
}
