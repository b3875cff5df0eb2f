import { Schema, type Connection, type Model } from 'mongoose';
import { AVAILABILITY, type Availability } from '../core/product.js';
import type { Country } from '../core/identifiers.js';

/**
 * One observed state of a product in a country, written when a refresh saw it change (and at its
 * first observation). Short of the product's own fields on purpose: a point is what a chart and an
 * alert need. `_id` names the change (see src/catalog/history.ts), so a retried write cannot append
 * it twice.
 */
export interface HistoryPointFields {
  _id: string;
  country: Country;
  asin: string;
  at: Date;
  /** Minor units (yen, cents); null when nothing is on offer. */
  price: number | null;
  currency: string | null;
  availability: Availability;
  /** Whether the price is the Buy Box winner's. */
  buybox: boolean;
  rank: number | null;
  /** When MongoDB's TTL monitor removes the point: `at` plus HISTORY_DAYS as it was when written. */
  expires_at: Date;
}

export const historyPointSchema = new Schema<HistoryPointFields>(
  {
    _id: { type: String, required: true },
    country: { type: String, required: true },
    asin: { type: String, required: true },
    at: { type: Date, required: true },
    price: { type: Number, default: null },
    currency: { type: String, default: null },
    availability: { type: String, enum: AVAILABILITY, required: true },
    buybox: { type: Boolean, required: true },
    rank: { type: Number, default: null },
    expires_at: { type: Date, required: true },
  },
  // Sharded by product and time (docs/scaling.md): a batch's points and a product's chart each go to
  // the shards of their products.
  { collection: 'history', versionKey: false, strict: 'throw', shardKey: { country: 1, asin: 1, at: 1 } },
);

// A product's points in time order: the history route's range and page, index-bounded.
historyPointSchema.index({ country: 1, asin: 1, at: 1 });
// An expiry per point rather than `expireAfterSeconds` on `at`: changing HISTORY_DAYS then needs no
// index rebuild (createIndexes refuses other options on an existing index); points already written
// keep the span they were written with.
historyPointSchema.index({ expires_at: 1 }, { expireAfterSeconds: 0 });

export type HistoryPointModel = Model<HistoryPointFields>;

export function historyPointModel(conn: Connection): HistoryPointModel {
  return (conn.models.HistoryPoint as HistoryPointModel | undefined) ?? conn.model<HistoryPointFields>('HistoryPoint', historyPointSchema);
}
