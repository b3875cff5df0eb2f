import { Schema, type Connection, type Model, type Types } from 'mongoose';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'gone'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** How long a delivery's record is kept. */
export const DELIVERY_RECORD_DAYS = 30;

/**
 * One webhook to an endpoint for one change, with the alerts the change fired there and what its
 * attempts got. `_id` is the delivery's job id and its `webhook-id`: one endpoint and one change
 * make one delivery, however often the change is seen and however many of the account's alerts
 * it fires. `payload` is the job's, kept so the delivery can be sent again after its job is gone.
 *
 * Records of before endpoints existed name one alert (`alert_id`) and have no endpoint or payload.
 */
export interface DeliveryFields {
  _id: string;
  /** The first alert the change fired (of an old record: its only one). */
  alert_id: Types.ObjectId;
  /** Every alert the change fired at the endpoint; absent on an old record. */
  alert_ids?: Types.ObjectId[];
  endpoint_id?: Types.ObjectId | null;
  user_id: Types.ObjectId;
  status: DeliveryStatus;
  attempts: number;
  /** The status code of the last answer; null when none came (network error, timeout). */
  response_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  /** The job's payload (src/alerts/deliveries/queue.ts), parsed again before any replay. */
  payload?: unknown;
  /** Times the account asked for the delivery again; each replay's job id ends with it. */
  replays?: number;
  /** Marks the records one bulk replay claimed, to tell them from a concurrent replay's. */
  replay_token?: string | null;
  created_at: Date;
  updated_at: Date;
}

export const deliverySchema = new Schema<DeliveryFields>(
  {
    _id: { type: String, required: true },
    alert_id: { type: Schema.Types.ObjectId, required: true },
    alert_ids: { type: [Schema.Types.ObjectId], default: undefined },
    endpoint_id: { type: Schema.Types.ObjectId, default: null },
    user_id: { type: Schema.Types.ObjectId, required: true },
    status: { type: String, enum: DELIVERY_STATUSES, default: 'pending' },
    attempts: { type: Number, default: 0 },
    response_code: { type: Number, default: null },
    last_error: { type: String, default: null },
    delivered_at: { type: Date, default: null },
    payload: { type: Schema.Types.Mixed, select: false },
    replays: { type: Number, default: 0 },
    replay_token: { type: String, default: null, select: false },
  },
  {
    collection: 'alert_deliveries',
    versionKey: false,
    strict: 'throw',
    timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' },
  },
);

// An alert's deliveries, newest first: old records by their one alert, new ones by any they fired.
deliverySchema.index({ alert_id: 1, created_at: -1, _id: -1 });
deliverySchema.index({ alert_ids: 1, created_at: -1, _id: -1 });
// An account's deliveries, newest first, all of them or of one status; and a bulk replay's pick.
deliverySchema.index({ user_id: 1, created_at: -1, _id: -1 });
deliverySchema.index({ user_id: 1, status: 1, created_at: -1, _id: -1 });
// An endpoint's records, oldest first, for trimming to DELIVERY_RECORDS_PER_ENDPOINT.
deliverySchema.index({ endpoint_id: 1, created_at: 1 });
// The oldest delivery still pending, for its gauge.
deliverySchema.index({ status: 1, created_at: 1 });
deliverySchema.index({ created_at: 1 }, { expireAfterSeconds: DELIVERY_RECORD_DAYS * 86_400 });

export type DeliveryModel = Model<DeliveryFields>;

export function deliveryModel(conn: Connection): DeliveryModel {
  return (conn.models.Delivery as DeliveryModel | undefined) ?? conn.model<DeliveryFields>('Delivery', deliverySchema);
}
