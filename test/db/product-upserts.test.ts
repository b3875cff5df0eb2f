import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import '../../src/db/mongo.js';
import { upsertProducts, type ProductUpsert } from '../../src/catalog/product-upserts.js';
import { productModel, type ProductFields } from '../../src/models/product.js';
import { uniqueName } from '../helpers/context.js';

/**
 * The refresh's upserts skip mongoose's cast: what they write must be what mongoose's bulkWrite
 * would have written, on insert (the schema's defaults) and on update (nothing else touched).
 */
let conn: mongoose.Connection;
beforeAll(async () => {
  conn = mongoose.createConnection(inject('mongoUri'), { dbName: uniqueName('sw_upserts') });
  await conn.asPromise();
});
afterAll(async () => {
  await conn.dropDatabase().catch(() => undefined);
  await conn.close();
});

const now = new Date('2026-12-01T12:00:00Z');
const set: Partial<ProductFields> = {
  title: 'ひかりライフ ボールペン',
  price: { amount: 5320, currency: 'JPY' },
  availability: 'in_stock',
  browse_nodes: [{ id: '2546614484', name: null }],
  raw: { asin: 'x', offersV2: { listings: [{ price: { money: { amount: 5320 } } }] } },
  rate_obs: [{ hours: 2, changed: true }],
  price_days: [{ d: 20_423, lo: 5320, hi: 5320, sum: 5320, n: 1 }],
  price_levels: { avg_30: 6000 },
  drop: { avg_30: 11.3 },
  status: 'ok',
  updated_at: now,
  last_attempt_at: now,
  next_refresh_at: new Date(now.getTime() + 3_600_000),
};
const setOnInsert: Partial<ProductFields> = { created_at: now, priority: null };

/** A stored product without what differs by nature between two documents. */
async function stored(asin: string): Promise<Record<string, unknown>> {
  const doc = await productModel(conn).collection.findOne({ country: 'JP', asin }, { projection: { _id: 0, asin: 0 } });
  expect(doc).not.toBeNull();
  return doc!;
}

describe('upsertProducts', () => {
  it('inserts a new product as mongoose would: the same fields and the schema defaults', async () => {
    const mine: ProductUpsert = { country: 'JP', asin: 'B0UPSERT01', set, setOnInsert };
    await upsertProducts(conn, [mine]);
    await productModel(conn).bulkWrite([
      { updateOne: { filter: { country: 'JP', asin: 'B0UPSERT02' }, update: { $set: set, $setOnInsert: setOnInsert }, upsert: true } },
    ]);
    const [a, b] = [await stored('B0UPSERT01'), await stored('B0UPSERT02')];
    expect(a).toEqual(b);
    expect(a).toMatchObject({ ean: [], owners: [], history_at: null, brand: null, status: 'ok', plan_token: null });
  });

  it('updates an existing product in place: fields it does not name (or leaves undefined) stay, $setOnInsert does nothing', async () => {
    await productModel(conn).collection.updateOne(
      { country: 'JP', asin: 'B0UPSERT01' },
      { $set: { owners: [new mongoose.Types.ObjectId()], priority: 1, created_at: new Date(0) } },
    );
    const before = await stored('B0UPSERT01');
    await upsertProducts(conn, [
      { country: 'JP', asin: 'B0UPSERT01', set: { title: 'new title', brand: undefined, drop: {} }, setOnInsert },
    ]);
    expect(await stored('B0UPSERT01')).toEqual({ ...before, title: 'new title', drop: {} });
  });
});
