import mongoose, { type Connection } from 'mongoose';
import type { Country } from '../core/identifiers.js';
import { DEAL_FIELDS, dayNumber, daysOfPoints, dealFigures, KEPT_DAYS } from '../core/price-levels.js';
import { dealsIndexName, productModel, type ProductFields } from '../models/product.js';
import { historyPointModel } from '../models/history-point.js';
import type { Logger } from '../logger.js';

/** Products figured per batch: one history query and one bulk write each. */
const BATCH = 500;

type Lacking = Pick<ProductFields, '_id' | 'country' | 'asin' | 'price'>;

/** The first and last deals index: while either is missing, products may lack their figures. */
const MARKERS = [dealsIndexName(DEAL_FIELDS[0]!), dealsIndexName(DEAL_FIELDS.at(-1)!)];

/** Whether every deals index is built: then every product has been figured. */
export async function dealsIndexed(mongo: Connection): Promise<boolean> {
  const indexes = await productModel(mongo)
    .collection.indexes()
    .catch((err: { codeName?: string }) => {
      if (err.codeName === 'NamespaceNotFound') return [];
      throw err;
    });
  return MARKERS.every((name) => indexes.some((i) => i.name === name));
}

/**
 * Gives every fetched product the deals feed's figures (src/core/price-levels.ts), from its history
 * points of the last KEPT_DAYS days, in batches. A refresh writes them too, but a product nobody
 * watches is never refreshed again. Run before the indexes are built: their absence marks the work
 * as not done, so a start after it costs one `listIndexes`, and a start that stopped half-way
 * carries on from the products still lacking them. Several processes may run it at once: a write
 * is skipped when a refresh gave the product its figures meanwhile.
 */
export async function backfillDeals(mongo: Connection, logger: Logger, now = new Date()): Promise<number> {
  if (await dealsIndexed(mongo)) return 0;
  const products = productModel(mongo);
  const today = dayNumber(now);
  const since = new Date((today - KEPT_DAYS + 1) * 86_400_000);
  const lacking = { status: 'ok' as const, price_days: mongoose.trusted({ $exists: false }) };
  let done = 0;
  let batch: Lacking[] = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    const points = await historyOf(mongo, batch, since);
    const ops = batch.map((p) => {
      const key = `${p.country}.${p.asin}`;
      const price = p.price?.amount ?? null;
      const kept = points.get(key) ?? [];
      const days = daysOfPoints(kept.length > 0 ? kept : price === null ? [] : [{ at: now, price }], today);
      const { levels, drop } = dealFigures(days, price, today);
      return {
        updateOne: {
          filter: { _id: p._id, ...lacking },
          update: { $set: { price_days: days, price_levels: levels, drop } },
        },
      };
    });
    await products.bulkWrite(ops, { ordered: false });
    done += batch.length;
    batch = [];
  };
  const cursor = products.find(lacking).select({ _id: 1, country: 1, asin: 1, price: 1 }).lean<Lacking[]>().cursor({ batchSize: BATCH });
  for await (const p of cursor) {
    // Said only when there is work: a new database, and every admin command on it, stays quiet.
    if (done === 0 && batch.length === 0) logger.info('figuring the deals of the products');
    batch.push(p);
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  if (done > 0) logger.info({ products: done }, 'deals figured');
  return done;
}

/** The batch's history points since `since`, per `country.asin`, oldest first: one query per country. */
async function historyOf(mongo: Connection, batch: readonly Lacking[], since: Date) {
  const byCountry = new Map<Country, string[]>();
  for (const p of batch) byCountry.set(p.country, [...(byCountry.get(p.country) ?? []), p.asin]);
  const out = new Map<string, { at: Date; price: number | null }[]>();
  for (const [country, asins] of byCountry) {
    const points = await historyPointModel(mongo)
      .find({ country, asin: mongoose.trusted({ $in: asins }), at: mongoose.trusted({ $gte: since }) })
      .sort({ country: 1, asin: 1, at: 1 })
      .select({ asin: 1, at: 1, price: 1 })
      .lean();
    for (const pt of points) {
      const key = `${country}.${pt.asin}`;
      out.set(key, [...(out.get(key) ?? []), { at: pt.at, price: pt.price }]);
    }
  }
  return out;
}
