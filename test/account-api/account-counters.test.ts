import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mongoose, { Types, type Connection } from 'mongoose';
import { mongoUriFor, uniqueName } from '../helpers/context.js';
import { registerModels } from '../../src/models/index.js';
import { AccountCounters } from '../../src/accounts/counters.js';

/** src/accounts/counters.ts: reservations against a cap, under concurrency, from an unseeded counter. */
const dbName = uniqueName('sw_cnt');
let conn: Connection;
beforeAll(async () => {
  conn = await mongoose.createConnection(mongoUriFor(dbName)).asPromise();
  registerModels(conn);
});
afterAll(async () => {
  await conn.dropDatabase().catch(() => undefined);
  await conn.close();
});

describe('AccountCounters.reserve', () => {
  it('lets every one of concurrent first reservations of a new account through when there is room', async () => {
    const counters = new AccountCounters(conn, { things: async () => 0 });
    for (let trial = 0; trial < 20; trial++) {
      const user = new Types.ObjectId();
      const taken = await Promise.all(Array.from({ length: 8 }, () => counters.reserve(user, 'things', 1_000)));
      expect(taken.every(Boolean)).toBe(true);
      expect(await counters.value(user, 'things')).toBe(8);
    }
  });

  it('holds the cap under concurrency: 20 reservations against 5 take exactly 5', async () => {
    const counters = new AccountCounters(conn, { things: async () => 0 });
    const user = new Types.ObjectId();
    const taken = await Promise.all(Array.from({ length: 20 }, () => counters.reserve(user, 'things', 5)));
    expect(taken.filter(Boolean)).toHaveLength(5);
    expect(await counters.value(user, 'things')).toBe(5);
  });

  it('seeds a missing counter from the real count', async () => {
    const counters = new AccountCounters(conn, { things: async () => 4 });
    const user = new Types.ObjectId();
    expect(await counters.reserve(user, 'things', 5)).toBe(true);
    expect(await counters.reserve(user, 'things', 5)).toBe(false);
    expect(await counters.value(user, 'things')).toBe(5);
  });
});
