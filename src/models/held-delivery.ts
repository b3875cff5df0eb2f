import { Schema, type Connection, type Model, type Types } from 'mongoose';

/**
 * A delivery held for a digest: its endpoint takes digests (hourly, daily), or it fired in the
 * endpoint's quiet hours. The scheduler's digest tick sends every held delivery of an endpoint
 * whose window has closed (`due_at`) in one message (src/alerts/deliveries/digests.ts), then
 * deletes them.
 */
export interface HeldDeliveryFields {
  /** The delivery's id as an instant one would have had (endpoint and change): a change seen twice is held once. */
  _id: string;
  user_id: Types.ObjectId;
  endpoint_id: Types.ObjectId;
  alert_ids: Types.ObjectId[];
  /** The delivery's content (src/alerts/deliveries/payload.ts), parsed again when the digest is made. */
  payload: unknown;
  fired_at: Date;
  /** When the window it waits for closes: the digest's time, or the end of the quiet hours. */
  due_at: Date;
  /**
   * The digest that took it, set before that digest is queued and kept until it is: a tick that
   * died between the two queues the same digest again (same id, so BullMQ adds it once).
   */
  digest_id: string | null;
}

export const heldDeliverySchema = new Schema<HeldDeliveryFields>(
  {
    _id: { type: String, required: true },
    user_id: { type: Schema.Types.ObjectId, required: true },
    endpoint_id: { type: Schema.Types.ObjectId, required: true },
    alert_ids: { type: [Schema.Types.ObjectId], default: [] },
    payload: { type: Schema.Types.Mixed, required: true },
    fired_at: { type: Date, required: true },
    due_at: { type: Date, required: true },
    digest_id: { type: String, default: null },
  },
  { collection: 'held_deliveries', versionKey: false, strict: 'throw' },
);

// The digest tick: what is due and not yet taken, by endpoint and window.
heldDeliverySchema.index({ digest_id: 1, due_at: 1, endpoint_id: 1 });
// One endpoint's held deliveries (removing an endpoint removes them).
heldDeliverySchema.index({ endpoint_id: 1, fired_at: -1 });

export type HeldDeliveryModel = Model<HeldDeliveryFields>;

export function heldDeliveryModel(conn: Connection): HeldDeliveryModel {
  return (conn.models.HeldDelivery as HeldDeliveryModel | undefined) ?? conn.model<HeldDeliveryFields>('HeldDelivery', heldDeliverySchema);
}
