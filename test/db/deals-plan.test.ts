import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CommandStartedEvent, Document } from 'mongodb';
import '../../src/db/mongo.js';
import { DealsCatalog, type DealsRequest } from '../../src/catalog/deals.js';
import { backfillDeals, dealsIndexed } from '../../src/catalog/deals-backfill.js';
import { dealsIndexName, dealsNodeIndexName, productModel } from '../../src/models/product.js';
import { historyPointModel } from '../../src/models/history-point.js';
import { createLogger } from '../../src/logger.js';
import { LogCapture, testEnv, uniqueName } from '../helpers/context.js';
import { loadConfig } from '../../config/env.js';

/**
 * The deals list reads about a page however many products the catalogue holds: the query the
 * catalogue sends is explained as sent (the stand-in answers `explain` with true counts).
 */
const N = 4_000;
const COUNTRIES = ['JP', 'US'] as const;

let conn: mongoose.Connection;
const commands: CommandStartedEvent[] = [];
beforeAll(async () => {
  conn = mongoose.createConnection(inject('mongoUri'), { dbName: uniqueName('sw_deals'), monitorCommands: true, autoIndex: false });
  await conn.asPromise();
  conn.getClient().on('commandStarted', (e) => commands.push(e));
  await productModel(conn).createIndexes();
  const now = new Date();
  await productModel(conn).collection.insertMany(
    Array.from({ length: N }, (_, i) => ({
      country: COUNTRIES[i % 2],
      asin: `B0DPLN${String(i).padStart(4, '0')}`,
      title: `Product ${i}`,
      price: { amount: 100 + (i % 1000), currency: 'JPY' },
      sales_rank: 1 + (i % 500),
      browse_nodes: [{ id: String(i % 50), name: null }],
      status: 'ok',
      priority: null,
      price_days: [],
      price_levels: {},
      // Every fourth product is a deal by avg_30, of a drop from 0.01 % to 40 %.
      drop: i % 4 === 0 ? { avg_30: 0.01 + (i % 4000) / 100 } : {},
      created_at: now,
      updated_at: now,
    })),
  );
});
afterAll(async () => {
  await conn?.dropDatabase().catch(() => undefined);
  await conn?.close();
});

interface Stats {
  readonly plan: string;
  readonly nReturned: number;
  readonly totalKeysExamined: number;
  readonly totalDocsExamined: number;
}

async function explainedPage(req: Partial<DealsRequest>): Promise<Stats> {
  commands.length = 0;
  await new DealsCatalog(conn).list({ country: 'JP', basis: 'avg', days: 30, page: 1, limit: 20, ...req });
  const finds = commands.filter((c) => c.commandName === 'find' && c.command.find === 'products');
  expect(finds).toHaveLength(1);
  const { lsid: _l, $db: _d, $clusterTime: _c, $readPreference: _r, ...find } = finds[0]!.command as Document;
  const explained = await conn.db!.command({ explain: find, verbosity: 'executionStats' });
  const stats = explained.executionStats as Omit<Stats, 'plan'>;
  return { plan: JSON.stringify(explained.queryPlanner.winningPlan), ...stats };
}

describe('the deals list reads about a page, not the catalogue', () => {
  const index = `"indexName":"${dealsIndexName('avg_30')}"`;

  it('walks the figure’s partial index from the largest drop and stops at the page', async () => {
    const s = await explainedPage({});
    expect(s.plan).toContain('"stage":"IXSCAN"');
    expect(s.plan).toContain(index);
    expect(s.plan).not.toContain('"SORT"');
    expect(s).toMatchObject({ nReturned: 21, totalKeysExamined: 21, totalDocsExamined: 21 });
  });

  it('a later page skips on the index: keys up to its end, documents of the page', async () => {
    const s = await explainedPage({ page: 5 });
    expect(s.plan).toContain(index);
    expect(s.nReturned).toBe(21);
    expect(s.totalKeysExamined).toBeLessThanOrEqual(5 * 20 + 1);
  });

  it('least drop and a price range are judged on the index keys', async () => {
    const s = await explainedPage({ minDrop: 10, minPrice: 300, maxPrice: 600 });
    expect(s.plan).toContain(index);
    expect(s.plan).not.toContain('"SORT"');
    expect(s.nReturned).toBe(21);
    expect(s.totalDocsExamined).toBe(21);
  });
});

describe('a browse node', () => {
  it('walks the figure’s node index: the page’s documents only, however rare the node', async () => {
    const s = await explainedPage({ node: '8' });
    expect(s.plan).toContain(`"indexName":"${dealsNodeIndexName('avg_30')}"`);
    expect(s.plan).not.toContain('"SORT"');
    expect(s.nReturned).toBe(21);
    expect(s.totalDocsExamined).toBe(21);
    expect(s.totalKeysExamined).toBeLessThanOrEqual(22);
  });
});

describe('backfillDeals', () => {
  it('figures products written before the deals feed from their history, then the indexes mark it done', async () => {
    const db = mongoose.createConnection(inject('mongoUri'), { dbName: uniqueName('sw_dfill'), autoIndex: false });
    await db.asPromise();
    try {
      const now = new Date();
      const day = 86_400_000;
      await productModel(db).collection.insertOne({
        country: 'JP',
        asin: 'B0FILL0001',
        price: { amount: 800, currency: 'JPY' },
        status: 'ok',
        created_at: now,
        updated_at: now,
      });
      await historyPointModel(db).insertMany([
        {
          _id: 'a',
          country: 'JP',
          asin: 'B0FILL0001',
          at: new Date(now.getTime() - 10 * day),
          price: 1000,
          availability: 'in_stock',
          buybox: true,
          expires_at: now,
        },
        { _id: 'b', country: 'JP', asin: 'B0FILL0001', at: now, price: 800, availability: 'in_stock', buybox: true, expires_at: now },
      ]);
      const logger = createLogger(loadConfig(testEnv()), new LogCapture());
      expect(await backfillDeals(db, logger, now)).toBe(1);
      const p = await productModel(db).findOne({ asin: 'B0FILL0001' }).select('+price_days').lean();
      expect(p?.price_days).toHaveLength(11);
      expect(p?.drop).toMatchObject({ low_30: 20, high_30: 20 });
      await productModel(db).createIndexes();
      expect(await dealsIndexed(db)).toBe(true);
      expect(await backfillDeals(db, logger, now)).toBe(0);
    } finally {
      await db.dropDatabase().catch(() => undefined);
      await db.close();
    }
  });
});
