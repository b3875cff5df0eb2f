/**
 * The refresh's writes of products, sent as the driver's own bulkWrite. Mongoose would cast each
 * update against the schema first, and on the refresh path that was most of a worker's CPU after
 * the call itself (14 % at 21 countries): the updates are built here from answers zod already
 * checked, typed as the schema's fields, so the cast adds nothing but its cost. What the cast
 * would have added is added here once: the schema's defaults on insert (mongoose's
 * setDefaultsOnInsert), and undefined values left out rather than written as null.
 */
import type { AnyBulkWriteOperation, Document } from 'mongodb';
import type { Connection } from 'mongoose';
import type { Country } from '../core/identifiers.js';
import { productModel, type ProductFields } from '../models/product.js';

export interface ProductUpsert {
  readonly country: Country;
  readonly asin: string;
  readonly set: Partial<ProductFields>;
  /** Set only when the product is new; the schema's defaults fill the fields neither names. */
  readonly setOnInsert: Partial<ProductFields>;
}

/** The schema's default of every field that has one, as a new product would hold it. */
const defaultsByConnection = new WeakMap<Connection, Readonly<Record<string, unknown>>>();

function insertDefaults(conn: Connection): Readonly<Record<string, unknown>> {
  let defaults = defaultsByConnection.get(conn);
  if (!defaults) {
    const { _id: _ignored, ...rest } = new (productModel(conn))().toObject<Record<string, unknown>>();
    defaults = rest;
    defaultsByConnection.set(conn, defaults);
  }
  return defaults;
}

/** The driver's update of one upsert: its own $setOnInsert, then the defaults of the fields no part names. */
function upsertOperation(defaults: Readonly<Record<string, unknown>>, u: ProductUpsert): AnyBulkWriteOperation<Document> {
  const set = u.set as Record<string, unknown>;
  const own = u.setOnInsert as Record<string, unknown>;
  const setOnInsert: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(defaults)) {
    if (set[field] === undefined && own[field] === undefined) setOnInsert[field] = value;
  }
  Object.assign(setOnInsert, u.setOnInsert);
  return {
    updateOne: {
      filter: { country: u.country, asin: u.asin },
      update: { $set: u.set, $setOnInsert: setOnInsert },
      upsert: true,
    },
  };
}

/** Upserts the products by (country, asin) in one unordered bulkWrite. */
export async function upsertProducts(conn: Connection, upserts: readonly ProductUpsert[]): Promise<void> {
  if (!upserts.length) return;
  const defaults = insertDefaults(conn);
  await productModel(conn).collection.bulkWrite(
    upserts.map((u) => upsertOperation(defaults, u)),
    { ordered: false, ignoreUndefined: true },
  );
}
