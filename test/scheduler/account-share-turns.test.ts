import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { asins } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { userModel } from '../../src/models/user.js';
import { pickAccountShares } from '../../src/scheduling/due.js';

/**
 * With fewer slots in a pass than accounts, each pass serves the accounts after the last one the
 * previous pass served: every account's share comes round, none is left to the global order for
 * good (where a heavy account's overdue products come first).
 */
let t: TestContext;
beforeAll(async () => {
  t = await createTestContext({ COUNTRIES: 'JP' });
});
afterAll(async () => {
  await t?.close();
});

describe('account shares in turns', () => {
  it('serves 5 accounts two a pass: 1-2, 3-4, 5-1', async () => {
    const made = await userModel(t.ctx.mongo).insertMany(
      Array.from({ length: 5 }, (_, i) => ({
        name: `turn-${i}`,
        email: `turn-${i}-${new Types.ObjectId().toHexString()}@turns.example.com`,
        token_hash: new Types.ObjectId().toHexString(),
        token_cipher: 'x',
      })),
    );
    const ids = made.map((u) => u._id).sort((a, b) => a.toHexString().localeCompare(b.toHexString()));
    const list = asins('B0TURN', 5);
    await productModel(t.ctx.mongo).insertMany(
      list.map((asin, i) => ({
        country: 'JP',
        asin,
        priority: 0,
        owners: [ids[i]!],
        next_refresh_at: new Date(Date.now() - 60_000),
        created_at: new Date(),
        status: 'ok',
      })),
    );
    const served = async () => (await pickAccountShares(t.ctx, 'JP', 2, new Date())).map((p) => list.indexOf(p.asin)).sort();
    expect(await served()).toEqual([0, 1]);
    expect(await served()).toEqual([2, 3]);
    expect(await served()).toEqual([0, 4]);
  });

  it('lets an account that left its share in one pass take its due products together in the next', async () => {
    // A database of its own: only these three accounts share the passes.
    const own = await createTestContext({ COUNTRIES: 'JP' });
    try {
      const made = await userModel(own.ctx.mongo).insertMany(
        Array.from({ length: 3 }, (_, i) => ({
          name: `fill-${i}`,
          email: `fill-${i}@fill.example.com`,
          token_hash: new Types.ObjectId().toHexString(),
          token_cipher: 'x',
          share_weight: i === 2 ? 2 : 1,
        })),
      );
      const [lightA, lightB, heavy] = made.map((u) => u._id);
      const t0 = Date.now();
      const owned = (owner: Types.ObjectId, prefix: string, n: number, dueAt: number) =>
        asins(prefix, n).map((asin) => ({
          country: 'JP',
          asin,
          priority: 0,
          owners: [owner],
          next_refresh_at: new Date(dueAt),
          created_at: new Date(t0),
          status: 'ok',
        }));
      await productModel(own.ctx.mongo).insertMany([
        ...owned(lightA!, 'B0FILA', 12, t0 + 30_000),
        ...owned(lightB!, 'B0FILB', 12, t0 + 30_000),
        ...owned(heavy!, 'B0FILH', 80, t0 - 60_000),
      ]);
      const pass = async (at: number) => {
        const picked = await pickAccountShares(own.ctx, 'JP', 40, new Date(at));
        return ['B0FILA', 'B0FILB', 'B0FILH'].map((prefix) => picked.filter((p) => p.asin.startsWith(prefix)).length);
      };
      // Shares of 40 by weight: 10 for each light account, 20 for the heavy one. Nothing of the
      // light accounts is due yet: the heavy one takes what they leave, as far as it read (its
      // share and one batch more); they keep their shares for the next pass.
      expect(await pass(t0)).toEqual([0, 0, 30]);
      // Their 12 each come due together: with the 10 each left last time they take all 12, and the
      // heavy account the 16 that are left.
      expect(await pass(t0 + 60_000)).toEqual([12, 12, 16]);
      // Everyone asking for more than a share: what was carried runs out within a few passes, and
      // each takes its weight's share.
      let last: number[] = [];
      for (let i = 0; i < 4; i++) last = await pass(t0 + 60_000);
      expect(last).toEqual([10, 10, 20]);
    } finally {
      await own.close();
    }
  });
});
