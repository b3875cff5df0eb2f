import { Schema, type Connection, type Model, type Types } from 'mongoose';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'gone'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** How long a delivery's record is kept. */
export const DELIVERY_RECORD_DAYS = 30;

/**
 * One webhook of an alert for one change, with what its attempts got. `_id` is the delivery's job
 * id (and its `webhook-id`): one alert and one change make one delivery, however often the change
 * is seen.
 */
export interface DeliveryFields {
  _id: string;
  alert_id: Types.ObjectId;
  user_id: Types.ObjectId;
  status: DeliveryStatus;
  attempts: number;
  /** The status code of the last answer; null when none came (network error, timeout). */
  response_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const deliverySchema = new Schema<DeliveryFields>(
  {
    _id: { type: String, required: true },
    alert_id: { type: Schema.Types.ObjectId, required: true },
    user_id: { type: Schema.Types.ObjectId, required: true },
    status: { type: String, enum: DELIVERY_STATUSES, default: 'pending' },
    attempts: { type: Number, default: 0 },
    response_code: { type: Number, default: null },
    last_error: { type: String, default: null },
    delivered_at: { type: Date, default: null },
  },
  {
    collection: 'alert_deliveries',
    versionKey: false,
    strict: 'throw',
    timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' },
  },
);

// An alert's deliveries, newest first.
deliverySchema.index({ alert_id: 1, created_at: -1, _id: -1 });
// The oldest delivery still pending, for its gauge.
deliverySchema.index({ status: 1, created_at: 1 });
deliverySchema.index({ created_at: 1 }, { expireAfterSeconds: DELIVERY_RECORD_DAYS * 86_400 });

export type DeliveryModel = Model<DeliveryFields>;

export function deliveryModel(conn: Connection): DeliveryModel {
  return (conn.models.Delivery as DeliveryModel | undefined) ?? conn.model<DeliveryFields>('Delivery', deliverySchema);
}
