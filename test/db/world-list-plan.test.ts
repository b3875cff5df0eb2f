import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CommandStartedEvent, Document } from 'mongodb';
import '../../src/db/mongo.js';
import { WorldCatalog } from '../../src/catalog/world-catalog.js';
import { rekeyProductSearch } from '../../src/catalog/search-rekey.js';
import { LEGACY_PRODUCT_SEARCH_INDEX, PRODUCT_SEARCH_INDEX, productModel } from '../../src/models/product.js';
import { searchKeys } from '../../src/search/keys.js';
import { orderedSearchKeys } from '../../src/search/ordered-keys.js';
import { createLogger } from '../../src/logger.js';
import { LogCapture, uniqueName } from '../helpers/context.js';

/**
 * The world list and its search read about a page of products however large the catalogue: the
 * queries the catalogue sends are explained as sent (the stand-in answers `explain` with true counts
 * of the keys and documents it examined).
 */
const N = 3_000;
const COUNTRIES = ['JP', 'US'] as const;
const WORDS = ['wireless', 'mouse', 'keyboard', 'cable', 'charger', 'speaker'];
const titleOf = (i: number) => `Acme ${WORDS[i % WORDS.length]} ${WORDS[(i * 7 + 3) % WORDS.length]} model ${i}`;

let conn: mongoose.Connection;
const commands: CommandStartedEvent[] = [];
beforeAll(async () => {
  conn = mongoose.createConnection(inject('mongoUri'), { dbName: uniqueName('sw_wplan'), monitorCommands: true, autoIndex: false });
  await conn.asPromise();
  conn.getClient().on('commandStarted', (e) => commands.push(e));
  await productModel(conn).createIndexes();
  const now = Date.now();
  await productModel(conn).collection.insertMany(
    Array.from({ length: N }, (_, i) => ({
      country: COUNTRIES[i % 2],
      asin: `B0PLAN${String(i).padStart(4, '0')}`,
      title: titleOf(i),
      brand: 'Acme',
      search_keys: orderedSearchKeys(titleOf(i), 'Acme'),
      priority: null,
      created_at: new Date(now - i * 1_000),
      updated_at: new Date(now - i * 1_000),
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

/** The page's find as the catalogue sent it, explained. */
async function explainedPage(run: () => Promise<unknown>): Promise<Stats> {
  commands.length = 0;
  await run();
  const finds = commands.filter((c) => c.commandName === 'find' && c.command.find === 'products' && c.command.sort);
  expect(finds).toHaveLength(1);
  const { lsid: _l, $db: _d, $clusterTime: _c, $readPreference: _r, ...find } = finds[0]!.command as Document;
  const explained = await conn.db!.command({ explain: find, verbosity: 'executionStats' });
  const stats = explained.executionStats as Omit<Stats, 'plan'>;
  return { plan: JSON.stringify(explained.queryPlanner.winningPlan), ...stats };
}

describe('the world list reads about a page, not the catalogue', () => {
  const world = () => new WorldCatalog(conn, 0, [...COUNTRIES]);

  it('every country: walks the newest-first index and stops at the page', async () => {
    const s = await explainedPage(() => world().list({ countries: [...COUNTRIES], page: 1, limit: 20 }));
    expect(s.plan).toContain('"indexName":"updated_at_-1__id_-1"');
    expect(s.plan).not.toContain('"SORT"');
    expect(s).toMatchObject({ nReturned: 20, totalKeysExamined: 20, totalDocsExamined: 20 });
  });

  it('one country: its own index, in order', async () => {
    const s = await explainedPage(() => world().list({ countries: ['JP'], page: 1, limit: 20 }));
    expect(s.plan).toContain('"indexName":"country_1_updated_at_-1__id_-1"');
    expect(s).toMatchObject({ nReturned: 20, totalKeysExamined: 20, totalDocsExamined: 20 });
  });

  it("a later page's total is counted from the index, reading no product", async () => {
    commands.length = 0;
    const page = await world().list({ countries: ['JP'], page: 3, limit: 20 });
    expect(page.total).toBe(N / 2);
    const counts = commands.filter((c) => c.commandName === 'aggregate' && c.command.aggregate === 'products');
    // With no kept totals (a TTL of 0) the page counts before it reads and again after.
    expect(counts.length).toBeGreaterThan(0);
    for (const count of counts) {
      const { lsid: _l, $db: _d, $clusterTime: _c, $readPreference: _r, ...aggregate } = count.command as Document;
      const text = JSON.stringify(await conn.db!.command({ explain: aggregate, verbosity: 'executionStats' }));
      expect(text).toContain('COUNT_SCAN');
      expect(text).toContain('"totalDocsExamined":0');
    }
  });

  it('a common word: one term walked newest first, a page of it', async () => {
    const s = await explainedPage(() => world().list({ countries: [...COUNTRIES], page: 1, limit: 20, search: 'wire' }));
    expect(s.plan).toContain(`"indexName":"${PRODUCT_SEARCH_INDEX}"`);
    expect(s.plan).not.toContain('"SORT"');
    expect(s.nReturned).toBe(20);
    expect(s.totalDocsExamined).toBeLessThanOrEqual(20);
  });

  it('a common word and a rare one: the walk follows the rare one', async () => {
    const page = await world().list({ countries: [...COUNTRIES], page: 1, limit: 20, search: 'model 1234' });
    expect(page.items.map((p) => p.asin)).toEqual(['B0PLAN1234']);
    const s = await explainedPage(() => world().list({ countries: [...COUNTRIES], page: 1, limit: 20, search: 'model 1234' }));
    expect(s.plan).toContain('"search_keys":["[\\"p:1234\\", \\"p:1234\\"]"]');
    expect(s.totalDocsExamined).toBe(1);
  });

  it('finds what the word prefixes promise, in list order', async () => {
    const page = await world().list({ countries: ['US'], page: 1, limit: 5, search: 'Mou  CHAR' });
    const expected = Array.from({ length: N }, (_, i) => i)
      .filter((i) => i % 2 === 1 && /mouse/.test(titleOf(i)) && /charger/.test(titleOf(i)))
      .slice(0, 5)
      .map((i) => `B0PLAN${String(i).padStart(4, '0')}`);
    expect(expected).toHaveLength(5);
    expect(page.items.map((p) => p.asin)).toEqual(expected);
  });
});

describe('rekeyProductSearch', () => {
  it('gives products keyed before word prefixes their new keys, then drops the old index', async () => {
    const db = mongoose.createConnection(inject('mongoUri'), { dbName: uniqueName('sw_rekey'), autoIndex: false });
    await db.asPromise();
    try {
      const products = productModel(db);
      await products.createIndexes();
      await products.collection.createIndex({ search_keys: 1, updated_at: -1 }, { name: LEGACY_PRODUCT_SEARCH_INDEX });
      const at = new Date();
      await products.collection.insertMany([
        {
          country: 'JP',
          asin: 'B0REKEY001',
          title: 'Wireless mouse',
          brand: 'Acme',
          search_keys: searchKeys('Wireless mouse', 'Acme'),
          created_at: at,
          updated_at: at,
        },
        { country: 'JP', asin: 'B0REKEY002', title: null, brand: null, search_keys: [], created_at: at, updated_at: null },
      ]);
      const world = new WorldCatalog(db, 0, ['JP']);
      expect((await world.list({ countries: ['JP'], page: 1, limit: 5, search: 'wire' })).items).toEqual([]);

      const logs = new LogCapture();
      await rekeyProductSearch(db, createLogger({ log: { level: 'info', pretty: false } }, logs));
      expect((await world.list({ countries: ['JP'], page: 1, limit: 5, search: 'wire' })).items.map((p) => p.asin)).toEqual(['B0REKEY001']);
      const names = (await products.collection.indexes()).map((i) => i.name);
      expect(names).not.toContain(LEGACY_PRODUCT_SEARCH_INDEX);
      expect(names).toContain(PRODUCT_SEARCH_INDEX);
      expect(logs.text).toContain('"products":1');

      // Done once: a later start only lists the indexes.
      const again = new LogCapture();
      await rekeyProductSearch(db, createLogger({ log: { level: 'info', pretty: false } }, again));
      expect(again.text).not.toContain('re-keying');
    } finally {
      await db.dropDatabase().catch(() => undefined);
      await db.close();
    }
  });
});
