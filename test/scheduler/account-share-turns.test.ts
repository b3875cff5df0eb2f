import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { asins } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { userModel } from '../../src/models/user.js';
import { pickAccountShares } from '../../src/scheduling/account-shares.js';

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
});
