import express from 'express';
import mongoose from 'mongoose';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { CommandStartedEvent } from 'mongodb';
import '../../src/db/mongo.js';
import { listPosts, listUsers } from '../../src/directory/listing.js';
import { WorldCatalog } from '../../src/catalog/world-catalog.js';
import { userModel } from '../../src/models/user.js';
import { productModel } from '../../src/models/product.js';
import { searchFilter } from '../../src/search/keys.js';
import { orderedSearchKeys } from '../../src/search/ordered-keys.js';
import { errorHandler } from '../../src/app/http/error-handler.js';
import { createLogger } from '../../src/logger.js';
import { LogCapture, uniqueName } from '../helpers/context.js';

/**
 * The public lists' queries carry a server-side time limit (maxTimeMS), so that no request can hold
 * MongoDB for long; a query that runs out answers 503 (retry later), not 500. The stand-in used in
 * CI accepts maxTimeMS without enforcing it, so the limit is checked on the commands as they go on
 * the wire (command monitoring), and the answer to MongoDB's MaxTimeMSExpired on the error handler.
 */
let conn: mongoose.Connection;
const commands: CommandStartedEvent[] = [];
beforeAll(async () => {
  conn = mongoose.createConnection(inject('mongoUri'), { dbName: uniqueName('sw_qtime'), monitorCommands: true, autoIndex: false });
  await conn.asPromise();
  conn.getClient().on('commandStarted', (e) => commands.push(e));
  const users = await userModel(conn).create(
    Array.from({ length: 3 }, (_, i) => ({
      name: `Timed ${i}`,
      email: `timed${i}@example.com`,
      token_hash: `h${i}`,
      token_cipher: `c${i}`,
      search_keys: ['w:timed'],
    })),
  );
  expect(users).toHaveLength(3);
  const now = new Date();
  await productModel(conn).create({
    asin: 'B0TIMED001',
    country: 'JP',
    created_at: now,
    updated_at: now,
    title: 'Timed phone',
    search_keys: orderedSearchKeys('Timed phone'),
  });
  // The world search hints its index.
  await productModel(conn).createIndexes();
});
afterAll(async () => {
  await conn?.dropDatabase().catch(() => undefined);
  await conn?.close();
});

/** The read commands sent while `run` ran, on the given collections. */
async function readsOf(run: () => Promise<unknown>, collections: string[]): Promise<CommandStartedEvent[]> {
  commands.length = 0;
  await run();
  return commands.filter(
    (c) => ['find', 'count', 'aggregate'].includes(c.commandName) && collections.includes(String(c.command[c.commandName])),
  );
}

describe('maxTimeMS on the public lists', () => {
  it.each([
    ['directory users, unfiltered', () => listUsers(conn, { page: 1, limit: 2, search: searchFilter(undefined) }), ['users']],
    ['directory users, searched', () => listUsers(conn, { page: 1, limit: 2, search: searchFilter('timed') }), ['users']],
    ['directory posts, searched', () => listPosts(conn, { page: 1, limit: 2, search: searchFilter('timed') }), ['posts']],
    ['world list', () => new WorldCatalog(conn, 0, ['JP']).list({ countries: ['JP'], page: 1, limit: 1, search: 'timed' }), ['products']],
    [
      'world list, two words',
      () => new WorldCatalog(conn, 0, ['JP']).list({ countries: ['JP'], page: 1, limit: 1, search: 'timed phone' }),
      ['products'],
    ],
    ['world list, page 2', () => new WorldCatalog(conn, 0, ['JP']).list({ countries: ['JP'], page: 2, limit: 1 }), ['products']],
    ['world new', () => new WorldCatalog(conn, 0, ['JP']).created({ countries: ['JP'], page: 1, limit: 1 }), ['products']],
  ])('%s: every find and count carries maxTimeMS', async (_what, run, collections) => {
    const reads = await readsOf(run, collections);
    expect(reads.length).toBeGreaterThan(0);
    for (const c of reads) {
      const limit = c.command.maxTimeMS as unknown;
      expect(limit, `${c.commandName} ${JSON.stringify(c.command).slice(0, 200)}`).toBeTypeOf('number');
      expect(limit).toBeGreaterThan(0);
      expect(limit).toBeLessThanOrEqual(10_000);
    }
  });
});

describe('a query that runs out of time', () => {
  it('answers 503 with Retry-After, never 500', async () => {
    const logs = new LogCapture();
    const app = express();
    app.get('/slow', () => {
      throw new mongoose.mongo.MongoServerError({ message: 'operation exceeded time limit', code: 50, codeName: 'MaxTimeMSExpired' });
    });
    // The same code under another message still counts; another code is still a 500.
    app.get('/reworded', () => {
      throw new mongoose.mongo.MongoServerError({ message: 'whatever the server says', code: 50 });
    });
    app.get('/other', () => {
      throw new mongoose.mongo.MongoServerError({ message: 'operation exceeded time limit', code: 2 });
    });
    app.use(errorHandler(createLogger({ log: { level: 'info', pretty: false } }, logs)));
    for (const path of ['/slow', '/reworded']) {
      const res = await supertest(app).get(path);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.body).toEqual({ message: expect.any(String) as string });
      expect(res.text).not.toMatch(/MaxTimeMS|exceeded|whatever/);
    }
    expect((await supertest(app).get('/other')).status).toBe(500);
    expect(logs.text).toContain('"code":50');
  });
});
