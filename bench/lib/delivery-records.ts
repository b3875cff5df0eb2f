/**
 * Webhook deliveries as the product recorded them, read after its processes stopped: each one's
 * webhook-id (what the receiver saw) and the time of the history point it reports, with the ms
 * precision the webhook body's `at` (whole seconds) does not have.
 */
import { Types, type Connection } from 'mongoose';

export interface DeliveryRecord {
  /** The delivery's id and webhook-id: `<endpoint id>.<change key>`. */
  readonly id: string;
  /** Epoch ms of the refresh that saw the change (its history point); null when the point is gone. */
  readonly at: number | null;
  readonly status: string;
}

export async function readDeliveries(conn: Connection, endpointIds: readonly string[]): Promise<DeliveryRecord[]> {
  const records = await conn
    .db!.collection<{ _id: string; status: string }>('alert_deliveries')
    .find({ endpoint_id: { $in: endpointIds.map((id) => new Types.ObjectId(id)) } }, { projection: { _id: 1, status: 1 } })
    .toArray();
  // The change key is the history point's id (src/catalog/history.ts).
  const keyOf = (id: string) => id.slice(id.indexOf('.') + 1);
  const points = await conn
    .db!.collection<{ _id: string; at: Date }>('history')
    .find({ _id: { $in: records.map((r) => keyOf(r._id)) } }, { projection: { _id: 1, at: 1 } })
    .toArray();
  const at = new Map(points.map((pt) => [pt._id, pt.at.getTime()]));
  return records.map((r) => ({ id: r._id, at: at.get(keyOf(r._id)) ?? null, status: r.status }));
}
