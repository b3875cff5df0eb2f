import mongoose, { type Connection } from 'mongoose';
import { LEGACY_PRODUCT_SEARCH_INDEX, productModel, type ProductFields } from '../models/product.js';
import { orderedSearchKeys } from '../search/ordered-keys.js';
import type { Logger } from '../logger.js';

/** Products re-keyed per bulk write. */
const BATCH = 1_000;

type Keyed = Pick<ProductFields, '_id' | 'title' | 'brand'>;

/**
 * Gives every stored product the keys the world search looks for (word prefixes, single
 * characters: src/search/ordered-keys.ts). A refresh writes them too, but a product nobody watches
 * is never refreshed again. The index of the keys before them marks the work as not done: it is
 * dropped last, so a process stopped half-way leaves it for the next start, and a start after it
 * costs one `listIndexes`. Several processes may run it at once: each write is a pure function of
 * the title and brand it read, and is skipped when a refresh changed them meanwhile.
 */
export async function rekeyProductSearch(mongo: Connection, logger: Logger): Promise<void> {
  const products = productModel(mongo);
  const indexes = await products.collection.indexes().catch((err: { codeName?: string }) => {
    if (err.codeName === 'NamespaceNotFound') return [];
    throw err;
  });
  if (!indexes.some((i) => i.name === LEGACY_PRODUCT_SEARCH_INDEX)) return;

  logger.info('re-keying the products for the world search');
  let done = 0;
  let batch: mongoose.mongo.AnyBulkWriteOperation<ProductFields>[] = [];
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return;
    await products.bulkWrite(batch, { ordered: false });
    done += batch.length;
    batch = [];
  };
  const cursor = products
    .find({ title: mongoose.trusted({ $type: 'string' }) })
    .select({ _id: 1, title: 1, brand: 1 })
    .lean<Keyed[]>()
    .cursor({ batchSize: BATCH });
  for await (const p of cursor) {
    batch.push({
      updateOne: {
        filter: { _id: p._id, title: p.title, brand: p.brand },
        update: { $set: { search_keys: orderedSearchKeys(p.title, p.brand) } },
      },
    });
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  await products.collection.dropIndex(LEGACY_PRODUCT_SEARCH_INDEX).catch((err: { codeName?: string }) => {
    // Another process finished first.
    if (err.codeName !== 'IndexNotFound') throw err;
  });
  logger.info({ products: done }, 'products re-keyed for the world search');
}
