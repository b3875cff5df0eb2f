import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { asins } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { userModel } from '../../src/models/user.js';
import { overAllowances } from '../../src/scheduling/account-allowances.js';
import { refreshIntervalMs } from '../../src/scheduling/change-rate.js';
import { cappedAccounts, tuneCountry, tuneInputOf } from '../../src/scheduling/tune-country.js';
import { FIRST_BOOST, tunePolicy, type RateCount } from '../../src/scheduling/tune-policy.js';
import { MAX_ITEMS_PER_CALL } from '../../src/upstream/port.js';

/**
 * A heavy account's catalogue must not stretch the light accounts' intervals: the country's price
 * is tuned to what the light accounts ask for plus the heavy one's fair part, so light products
 * that together ask for less than their share keep the shortest interval.
 */
const MIN_MS = 20_000;
const MAX_MS = 120_000;
const refresh = { refresh: { scheduling: 'adaptive', minIntervalMs: MIN_MS, intervalMs: [MAX_MS, 60_000] } } as never;
/** Refreshes an hour of n products at the shortest interval. */
const atMin = (n: number) => (n * 3_600_000) / MIN_MS;
/** Products changing every 2 minutes or so (the rate per hour of each bucket), as in bench:tenants. */
const catalogue = (n: number): RateCount[] => [
  { rate: 20, count: n / 2 },
  { rate: 40, count: n / 2 },
];

describe('account allowances', () => {
  it('water-fills by weight: the accounts below the level get their demand, the rest share what is left', () => {
    const lights = Array.from({ length: 99 }, (_, i) => ({ id: `l${i}`, weight: 1, perHour: 10 }));
    const over = overAllowances([...lights, { id: 'heavy', weight: 2, perHour: 1_000 }], 1_500);
    expect(over).toEqual([{ id: 'heavy', perHour: 510, excess: 490 }]);
    expect(overAllowances([...lights, { id: 'heavy', weight: 2, perHour: 500 }], 1_500)).toEqual([]);
    // Two heavy accounts of weights 1 and 3 past the level split what the lights leave, 1 : 3.
    const two = overAllowances([...lights, { id: 'a', weight: 1, perHour: 5_000 }, { id: 'b', weight: 3, perHour: 5_000 }], 1_390);
    expect(two.map((a) => [a.id, a.perHour])).toEqual([
      ['a', 100],
      ['b', 300],
    ]);
  });

  it("keeps light accounts' shortest interval beside a heavy catalogue, which alone is stretched", () => {
    const light = catalogue(700);
    const heavy = catalogue(4_000);
    const rates = [...light, ...heavy];
    const budgetPerHour = atMin(2_000);
    const base = { minMs: MIN_MS, maxMs: MAX_MS, weight: null, budgetPerHour };
    const lightAlone = tunePolicy({ ...base, rates: light })!;
    const shared = tunePolicy({ ...base, rates })!;
    const demands = [
      ...Array.from({ length: 100 }, (_, i) => ({ id: `l${i}`, weight: 1, perHour: atMin(7) })),
      { id: 'heavy', weight: 2, perHour: atMin(4_000) },
    ];
    const [cap] = overAllowances(demands, budgetPerHour);
    const fair = tunePolicy({ ...base, rates, capped: [{ rates: heavy, perHour: cap!.perHour }] })!;
    const interval = (policy: Parameters<typeof refreshIntervalMs>[3], rate: number) => refreshIntervalMs(refresh, 0, rate, policy);
    for (const { rate } of light) {
      expect(interval(lightAlone, rate)).toBe(MIN_MS);
      // One price for every product: the heavy catalogue stretches the light products' intervals.
      expect(interval(shared, rate)).toBeGreaterThan(1.5 * MIN_MS);
      expect(interval(fair, rate)).toBe(MIN_MS);
    }
  });
});

describe('capped accounts from the products in MongoDB', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext({ COUNTRIES: 'JP', REFRESH_MIN_INTERVAL: '20s', REFRESH_INTERVAL_P0: '120s' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('finds the account past its part by weight, with its histogram, a shared product split between owners', async () => {
    const users = userModel(t.ctx.mongo);
    const made = await users.insertMany(
      ['l1', 'l2', 'l3', 'heavy'].map((name) => ({
        name,
        email: `${name}-${new Types.ObjectId().toHexString()}@allowances.example.com`,
        token_hash: new Types.ObjectId().toHexString(),
        token_cipher: 'x',
        share_weight: name === 'heavy' ? 2 : 1,
      })),
    );
    const [l1, l2, l3, heavy] = made.map((u) => u._id);
    const list = asins('B0FAIR', 130);
    const owners = (i: number) => (i < 100 ? [heavy!] : i < 110 ? [l1!] : i < 120 ? [l2!] : i < 129 ? [l3!] : [l3!, heavy!]);
    await productModel(t.ctx.mongo).insertMany(
      list.map((asin, i) => ({
        country: 'JP',
        asin,
        priority: 0,
        owners: owners(i),
        change_rate: i % 2 ? 20 : 40,
        next_refresh_at: new Date(),
        created_at: new Date(),
        status: 'ok',
      })),
    );
    // 80 products' worth at the shortest interval: the lights ask for 10, 10 and 9.5 (under the
    // level of 16 a weight), the heavy account for 100.5, and its part is what the lights leave.
    const capped = await cappedAccounts(t.ctx, 'JP', atMin(80));
    expect(capped).toHaveLength(1);
    expect(capped[0]!.perHour).toBeCloseTo(atMin(80 - 29.5), 6);
    const count = capped[0]!.rates.reduce((n, r) => n + r.count, 0);
    expect(count).toBeCloseTo(100.5, 6);
    expect(await cappedAccounts(t.ctx, 'JP', atMin(200))).toEqual([]);

    // The country's tuning at that budget (the first tuning asks FIRST_BOOST times it): the light
    // products keep the shortest interval; one price over every product would stretch them.
    const callsPerSecond = atMin(80) / FIRST_BOOST / (MAX_ITEMS_PER_CALL * 3_600);
    const policy = await tuneCountry(t.ctx, 'JP', callsPerSecond);
    expect(policy).not.toBeNull();
    for (const rate of [20, 40]) expect(refreshIntervalMs(t.ctx.config, 0, rate, policy)).toBe(MIN_MS);
    const oneprice = tunePolicy({
      ...tuneInputOf(t.ctx.config, { p0: catalogue(130), p1: [] }, callsPerSecond),
      boost: FIRST_BOOST,
    })!;
    expect(refreshIntervalMs(t.ctx.config, 0, 20, oneprice)).toBeGreaterThan(MIN_MS);
  });
});
