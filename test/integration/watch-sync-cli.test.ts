import { afterAll, describe, expect, it } from 'vitest';
import mongoose from 'mongoose';
import { runCli } from '../helpers/cli.js';
import { cliDatabase } from '../helpers/context.js';

const db = cliDatabase('sw_wsync');
afterAll(() => db.close());

describe('watch:sync', () => {
  it('creates the products of a newly added country for every watched ASIN, due now, and is idempotent', async () => {
    const userId = new mongoose.Types.ObjectId();
    const now = new Date();
    await db.conn.collection('watches').insertMany([
      { user_id: userId, kind: 'asin', key: 'B0SYNC0001', priority: 1, source: 'api', created_at: now, updated_at: now },
      { user_id: userId, kind: 'asin', key: 'B0SYNC0002', priority: 0, source: 'api', created_at: now, updated_at: now },
      { user_id: userId, kind: 'browse', key: '123', priority: 0, source: 'api', created_at: now, updated_at: now },
    ]);
    // As it was with COUNTRIES=JP: JP products exist, US ones do not.
    await db.conn.collection('products').insertMany(
      ['B0SYNC0001', 'B0SYNC0002'].map((asin, i) => ({
        country: 'JP',
        asin,
        priority: i === 0 ? 1 : 0,
        next_refresh_at: new Date(now.getTime() + 3_600_000),
        created_at: now,
        status: 'ok',
        // As a refresh writes it (without it, a product from before the deals feed, figured at start).
        price_days: [],
      })),
    );

    const res = await runCli(['watch:sync'], { ...db.env, COUNTRIES: 'JP,US' });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ asins: 2, madeDue: 2, countries: ['JP', 'US'] });
    const us = await db.conn.collection('products').find({ country: 'US' }).sort({ asin: 1 }).toArray();
    expect(us.map((p) => [p.asin, p.priority, p.status])).toEqual([
      ['B0SYNC0001', 1, 'pending'],
      ['B0SYNC0002', 0, 'pending'],
    ]);
    expect(us.every((p) => (p.next_refresh_at as Date).getTime() <= Date.now())).toBe(true);
    // The JP products keep their schedule.
    const jp = await db.conn.collection('products').findOne({ country: 'JP', asin: 'B0SYNC0001' });
    expect((jp?.next_refresh_at as Date).getTime()).toBe(now.getTime() + 3_600_000);

    const again = await runCli(['watch:sync'], { ...db.env, COUNTRIES: 'JP,US' });
    expect(JSON.parse(again.stdout)).toMatchObject({ asins: 2, madeDue: 0 });
    expect(await db.conn.collection('products').countDocuments()).toBe(4);
  });
});
