import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamRateLimitedError } from '../../src/core/errors.js';
import { findAsins, ManualClock, startHarness, type SimHarness } from './helpers.js';

describe('simulator quota', () => {
  let h: SimHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('answers 429 beyond the requests per second, per country, and again after a second', async () => {
    h = await startHarness({ SIMULATOR_QUOTA_RPS: '3', SIMULATOR_QUOTA_PER_DAY: '1000' });
    const jp = h.port('JP');
    const us = h.port('US');
    const asins = findAsins(h.sim, 'JP', 'found', 10);
    const outcomes: string[] = [];
    for (const a of asins.slice(0, 5))
      outcomes.push(
        await jp.getItems([a]).then(
          () => 'ok',
          (e: unknown) => (e instanceof UpstreamRateLimitedError ? `429:${e.quotaCode}` : 'other'),
        ),
      );
    expect(outcomes).toEqual(['ok', 'ok', 'ok', '429:RequestsPerSecond', '429:RequestsPerSecond']);
    // The US has its own budget.
    await expect(us.getItems(findAsins(h.sim, 'US', 'found', 1))).resolves.toBeTruthy();
    h.clock.advance(1000);
    for (const a of asins.slice(5, 8)) await expect(jp.getItems([a])).resolves.toBeTruthy();
    await expect(jp.getItems([asins[8]!])).rejects.toBeInstanceOf(UpstreamRateLimitedError);
    expect(h.sim.stats().countries.JP?.getItems).toMatchObject({ calls: 9, throttled: 3 });
  });

  it('answers 429 once the day is spent, until the next UTC day', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 23, 0, 0));
    h = await startHarness({ SIMULATOR_QUOTA_RPS: '100', SIMULATOR_QUOTA_PER_DAY: '4' }, clock);
    const jp = h.port('JP');
    const [a] = findAsins(h.sim, 'JP', 'found', 1);
    for (let i = 0; i < 4; i++) await jp.getItems([a!]);
    const err = await jp.getItems([a!]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamRateLimitedError);
    expect((err as UpstreamRateLimitedError).quotaCode).toBe('RequestsPerDay');
    expect((err as UpstreamRateLimitedError).retryAfterMs).toBe(3_600_000);
    clock.advance(3_600_000);
    await expect(jp.getItems([a!])).resolves.toBeTruthy();
  });
});

describe('synthetic catalogue', () => {
  const open: SimHarness[] = [];
  afterEach(async () => {
    while (open.length) await open.pop()!.close();
  });

  it('the same seed gives the same items, another seed other items', async () => {
    const [a, b, c] = await Promise.all([
      startHarness({ SIMULATOR_SEED: 's1' }),
      startHarness({ SIMULATOR_SEED: 's1' }),
      startHarness({ SIMULATOR_SEED: 's2' }),
    ]);
    open.push(a, b, c);
    const asins = findAsins(a.sim, 'JP', 'found', 10);
    const strip = (r: Awaited<ReturnType<ReturnType<SimHarness['port']>['getItems']>>) => ({
      outcomes: r.outcomes,
      items: r.items.map(({ raw: _raw, ...i }) => i),
    });
    const [ra, rb, rc] = await Promise.all([a.port('JP').getItems(asins), b.port('JP').getItems(asins), c.port('JP').getItems(asins)]);
    expect(strip(rb)).toEqual(strip(ra));
    expect(strip(rc).items.map((i) => i.title)).not.toEqual(strip(ra).items.map((i) => i.title));
    expect(a.sim.catalog.asinsForEan('JP', '4901234567894')).toEqual(b.sim.catalog.asinsForEan('JP', '4901234567894'));
  });

  it('prices, availability or ranks move between drift periods; titles stay', async () => {
    const h = await startHarness({ SIMULATOR_DRIFT_MS: '3600000' });
    open.push(h);
    const jp = h.port('JP');
    const asins = findAsins(h.sim, 'JP', 'found', 10);
    const before = await jp.getItems(asins);
    h.clock.advance(3_600_000);
    const after = await jp.getItems(asins);
    expect(after.items.map((i) => i.title)).toEqual(before.items.map((i) => i.title));
    const state = (r: typeof before) => r.items.map((i) => [i.price?.amount ?? null, i.availability, i.salesRank]);
    expect(state(after)).not.toEqual(state(before));
  });

  it('about 5 % of ASINs are not found and 1 % not accessible', async () => {
    const h = await startHarness();
    open.push(h);
    const counts = { found: 0, not_found: 0, not_accessible: 0 };
    for (let i = 0; i < 20_000; i++)
      counts[h.sim.catalog.lookup('US', `B0${i.toString(36).toUpperCase().padStart(8, '0')}`, 0, 'x-20').kind]++;
    expect(counts.not_found / 20_000).toBeGreaterThan(0.04);
    expect(counts.not_found / 20_000).toBeLessThan(0.06);
    expect(counts.not_accessible / 20_000).toBeGreaterThan(0.006);
    expect(counts.not_accessible / 20_000).toBeLessThan(0.014);
  });

  it('EANs and ASINs agree both ways', async () => {
    const h = await startHarness();
    open.push(h);
    const counts = new Map<number, number>();
    for (let n = 0; n < 2000; n++) {
      const first12 = `45${String(n * 7919).padStart(10, '0')}`;
      let sum = 0;
      for (let i = 0; i < 12; i++) sum += Number(first12[i]) * (i % 2 === 0 ? 1 : 3);
      const ean = first12 + ((10 - (sum % 10)) % 10);
      const asins = h.sim.catalog.asinsForEan('JP', ean);
      counts.set(asins.length, (counts.get(asins.length) ?? 0) + 1);
      for (const a of asins) {
        const item = h.sim.catalog.lookup('JP', a, 0, 'x-22');
        expect(item.kind).toBe('found');
        expect(JSON.stringify(item)).toContain(ean);
      }
    }
    expect(counts.get(1)! / 2000).toBeGreaterThan(0.7); // most codes list exactly one ASIN
    expect(counts.get(0)).toBeGreaterThan(0);
    expect(counts.get(2)).toBeGreaterThan(0);
  });
});
