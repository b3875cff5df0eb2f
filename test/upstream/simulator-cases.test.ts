/**
 * Issue 15, item 12: the simulator gives the answers the real service may give, not only those the
 * client expects: 429s with and without Retry-After and quotaCode, listings without an amount, a
 * partner tag checked against its marketplace, UPCs on US items, and a routing 404 that is not
 * ResourceNotFound. Each case is driven through raw HTTP (its shape) and through the client (what
 * it makes of it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Country } from '../../src/core/identifiers.js';
import { UnrecoverableError, UpstreamRateLimitedError } from '../../src/core/errors.js';
import * as errors from '../../src/core/errors.js';
import { eanCheckDigit } from '../../src/simulator/codes.js';
import { createUpstream } from '../../src/upstream/factory.js';
import { MARKETPLACES } from '../../src/upstream/marketplaces.js';
import { failureAction } from '../../jobs/failure.js';
import { until } from '../helpers/until.js';
import { findAsins, ManualClock, startHarness, type SimHarness } from './helpers.js';

interface WireListing {
  price?: { money?: { amount?: number; currency?: string } };
  isBuyBoxWinner?: boolean;
}
interface WireItem {
  itemInfo: { externalIds?: { eans?: { displayValues: string[] }; upcs?: { displayValues: string[] } }; title: { displayValue: string } };
  offersV2: { listings: WireListing[] };
}

const ConfigErrorClass = (): (new (...args: never[]) => Error) | undefined =>
  (errors as unknown as Record<string, new (...args: never[]) => Error>).UpstreamConfigError;

let h: SimHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function token(url: string, harness: SimHarness): Promise<string> {
  const res = await fetch(`${url}/auth/o2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      grant_type: 'client_credentials',
      client_id: harness.config.upstream.simulator.clientId,
      client_secret: harness.config.upstream.simulator.clientSecret,
      scope: 'creatorsapi::default',
    }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

/** One catalog call as raw HTTP: status, headers and body as the simulator sent them. */
async function raw(
  harness: SimHarness,
  op: string,
  body: Record<string, unknown>,
  country: Country = 'JP',
  path = `/catalog/v1/${op}`,
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> | string }> {
  const res = await fetch(`${harness.sim.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${await token(harness.sim.url, harness)}`,
      'x-marketplace': MARKETPLACES[country].host,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> | string = text;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

const item = (harness: SimHarness, country: Country, asin: string, at = harness.clock.t): WireItem => {
  const found = harness.sim.catalog.lookup(country, asin, at, country === 'JP' ? 'shelfwatch-22' : 'shelfwatch-20');
  if (found.kind !== 'found') throw new Error(`${asin} is ${found.kind}`);
  return found.item as unknown as WireItem;
};
const priced = (l: WireListing): boolean => typeof l.price?.money?.amount === 'number' && typeof l.price.money.currency === 'string';

describe('the partner tag is checked against its marketplace', () => {
  it('a US tag (-20) on amazon.co.jp → 400 InvalidPartnerTag, which stops the country', async () => {
    h = await startHarness({ CREATORS_PARTNER_TAG_JP: 'shelfwatch-20' });
    const [asin] = findAsins(h.sim, 'JP', 'found', 1);
    const answer = await raw(h, 'getItems', { partnerTag: 'shelfwatch-20', itemIds: [asin], resources: [] });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      type: 'ValidationException',
      reason: 'InvalidPartnerTag',
      fieldList: [{ name: 'partnerTag', message: expect.any(String) }],
    });
    const err = await h
      .port('JP')
      .getItems([asin!])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect((err as { reason?: string }).reason).toBe('InvalidPartnerTag');
    expect(failureAction(err, undefined)).toEqual({ action: 'stop_country' });
    // The right tag for each marketplace passes.
    expect((await raw(h, 'getItems', { partnerTag: 'shelfwatch-20', itemIds: [asin], resources: [] }, 'US')).status).toBe(200);
    expect((await raw(h, 'getItems', { partnerTag: 'other-22', itemIds: [asin], resources: [] })).status).toBe(200);
  });
});

describe('429s: one answer shape per case', () => {
  it('per-second 429s name their quota; some carry Retry-After and some do not, and the client then waits 1/Q', async () => {
    h = await startHarness({ SIMULATOR_QUOTA_RPS: '1', QUOTA_RPS: '4' });
    const [asin] = findAsins(h.sim, 'JP', 'found', 1);
    const answers = [];
    for (let i = 0; i < 12; i++) answers.push(await raw(h, 'getItems', { partnerTag: 'shelfwatch-22', itemIds: [asin], resources: [] }));
    expect(answers[0]!.status).toBe(200);
    const throttled = answers.slice(1);
    for (const a of throttled) {
      expect(a.status).toBe(429);
      expect(a.body).toMatchObject({ type: 'ThrottleException', serviceCode: expect.any(String), quotaCode: 'RequestsPerSecond' });
    }
    const withHeader = throttled.filter((a) => a.headers.get('retry-after') !== null).length;
    expect(withHeader).toBeGreaterThan(0);
    expect(withHeader).toBeLessThan(throttled.length);

    // The same through the client: no Retry-After means one interval of QUOTA_RPS (4/s: 250 ms).
    const jp = h.port('JP');
    const waits = new Set<number>();
    for (let i = 0; i < 12; i++) {
      const err = await jp.getItems([asin!]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UpstreamRateLimitedError);
      waits.add((err as UpstreamRateLimitedError).retryAfterMs);
    }
    expect([...waits].sort((a, b) => a - b)).toEqual([250, 1000]);
  });

  it("reads a call's time when it arrives, not when the simulator gets round to it", async () => {
    h = await startHarness({ SIMULATOR_QUOTA_RPS: '1' });
    const [asin] = findAsins(h.sim, 'JP', 'found', 1);
    const body = { partnerTag: 'shelfwatch-22', itemIds: [asin], resources: [] };
    const getItems = () => h!.sim.stats().countries.JP?.getItems?.calls ?? 0;
    h.sim.faults.update({ latencyMs: 1_000 });
    const first = raw(h, 'getItems', body);
    await until('the first call arrived', async () => getItems() === 1 || undefined);
    // It waits in the simulator while 990 ms pass on the service's clock; the next call arrives
    // a second after it, and the bucket (one call) has refilled by then.
    h.clock.advance(990);
    expect((await first).status).toBe(200);
    h.sim.faults.update({ latencyMs: 0 });
    h.clock.advance(10);
    expect((await raw(h, 'getItems', body)).status).toBe(200);
    expect((await raw(h, 'getItems', body)).status).toBe(429);
  });

  it('a throttle beyond the quota names no quota; the daily one names RequestsPerDay', async () => {
    h = await startHarness({ SIMULATOR_QUOTA_PER_DAY: '2', SIMULATOR_FAULTS: '{"throttleBurst":1}' });
    const [asin] = findAsins(h.sim, 'JP', 'found', 1);
    const call = () => raw(h!, 'getItems', { partnerTag: 'shelfwatch-22', itemIds: [asin], resources: [] });
    const burst = await call();
    expect(burst.status).toBe(429);
    expect(burst.body).toMatchObject({ type: 'ThrottleException' });
    expect(burst.body).not.toHaveProperty('quotaCode');
    expect((await call()).status).toBe(200);
    const day = await call();
    expect(day.status).toBe(429);
    expect(day.body).toMatchObject({ type: 'ThrottleException', quotaCode: 'RequestsPerDay' });
    expect(Number(day.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('listings without amount or currency', () => {
  it('some items have them; the client reads those items and takes the price from a usable listing or none', async () => {
    h = await startHarness();
    const candidates = findAsins(h.sim, 'US', 'found', 3000);
    const odd = candidates.filter((a) => item(h!, 'US', a).offersV2.listings.some((l) => !priced(l)));
    expect(odd.length).toBeGreaterThan(10);
    expect(odd.length).toBeLessThan(candidates.length / 5);
    const batch = odd.slice(0, 10);
    const res = await h.port('US').getItems(batch);
    expect(Object.values(res.outcomes)).toEqual(Array(10).fill('found'));
    for (const got of res.items) {
      const listings = item(h, 'US', got.asin).offersV2.listings.filter(priced);
      if (listings.length === 0) expect(got.price).toBeNull();
      else {
        const winner = listings.find((l) => l.isBuyBoxWinner);
        const cents = Math.round(
          (winner ?? listings.reduce((a, b) => (a.price!.money!.amount! <= b.price!.money!.amount! ? a : b))).price!.money!.amount! * 100,
        );
        expect(got.price).toEqual({ amount: cents, currency: 'USD' });
      }
    }
  });
});

describe('UPCs on US items', () => {
  it('US items list their code as a UPC, a 12-digit EAN or both; the client keeps one EAN-13 and finds them by code', async () => {
    h = await startHarness();
    const shapes = new Map<string, { asin: string; ean: string }>();
    for (let n = 0; shapes.size < 3 && n < 5000; n++) {
      const first12 = `0${String(7_000_000_000 + n * 7919).padStart(11, '0')}`;
      const ean = first12 + eanCheckDigit(first12);
      const [asin] = h.sim.catalog.asinsForEan('US', ean);
      if (!asin) continue;
      const ids = item(h, 'US', asin).itemInfo.externalIds!;
      const shape = `${ids.eans ? ids.eans.displayValues.map((v) => v.length).join('+') : '-'}/${ids.upcs ? 'upc' : '-'}`;
      if (!shapes.has(shape)) shapes.set(shape, { asin, ean });
    }
    expect([...shapes.keys()].sort()).toEqual(['-/upc', '12/-', '13/upc']);
    const us = h.port('US');
    for (const { asin, ean } of shapes.values()) {
      const [got] = (await us.getItems([asin])).items;
      expect(got!.eans).toEqual([ean]);
      expect((await us.findByCode(ean, 1)).items.map((i) => i.asin)).toContain(asin);
      expect((await us.findByCode(ean.slice(1), 1)).items.map((i) => i.asin)).toContain(asin);
    }
    // Japanese items keep their JAN as a 13-digit EAN.
    const jan = item(h, 'JP', 'BLEHHVJT7E').itemInfo.externalIds;
    expect(jan).toMatchObject({ eans: { displayValues: ['4901234567894'] } });
    expect(jan).not.toHaveProperty('upcs');
  });
});

describe('404s', () => {
  it('no results is a ResourceNotFoundException body; a wrong path is a routing 404 that is not', async () => {
    h = await startHarness();
    let ean = '';
    for (let n = 0; !ean; n++) {
      const first12 = `45${String(n).padStart(10, '0')}`;
      if (h.sim.catalog.search('JP', first12 + eanCheckDigit(first12)).length === 0) ean = first12 + eanCheckDigit(first12);
    }
    const none = await raw(h, 'searchItems', { partnerTag: 'shelfwatch-22', keywords: ean, resources: [] });
    expect(none.status).toBe(404);
    expect(none.body).toMatchObject({ type: 'ResourceNotFoundException', resourceType: 'SearchResult' });
    const routing = await raw(h, 'getItems', {}, 'JP', '/catalog/v2/getItems');
    expect(routing.status).toBe(404);
    expect(routing.headers.get('content-type')).toMatch(/^text\/html/);

    // The client: the first is an empty result, the second a configuration error that stops the country.
    expect((await h.port('JP').findByCode(ean, 1)).items).toEqual([]);
    const wrong = createUpstream(h.config, 'JP', {
      simulatorUrl: `${h.sim.url}/v0`,
      shared: h.shared,
    });
    const err = await wrong.getItems(['B000000001']).catch((e: unknown) => e);
    expect(ConfigErrorClass()).toBeDefined();
    expect(err).toBeInstanceOf(ConfigErrorClass()!);
    expect(failureAction(err, undefined)).toEqual({ action: 'stop_country' });
  });
});

describe('the quick start and the seed', () => {
  it("leaves the quick start's products as they were, and answers the same for the same seed", async () => {
    h = await startHarness();
    const hours = [0, 1, 2, 3, 5, 8, 13, 21].map((k) => h!.clock.t + k * 3_600_000);
    expect(item(h, 'JP', 'B0D1234567').itemInfo.title.displayValue).toBe('ハヤテ ワイヤレスイヤホン 1L ネイビー');
    expect(item(h, 'US', 'B0D1234567').itemInfo.title.displayValue).toBe('Evergreen Labs Compact Umbrella 3 Count Red');
    expect(item(h, 'US', 'B0D1234567').itemInfo.externalIds).toBeUndefined();
    expect(h.sim.catalog.asinsForEan('JP', '4901234567894')).toEqual(['BLEHHVJT7E']);
    expect(item(h, 'JP', 'BLEHHVJT7E').itemInfo.title.displayValue).toBe('ひかりライフ ヨガマット 限定モデル ブラック');
    for (const [country, asin] of [
      ['JP', 'B0D1234567'],
      ['US', 'B0D1234567'],
      ['JP', 'BLEHHVJT7E'],
    ] as const) {
      for (const at of hours) expect(item(h, country, asin, at).offersV2.listings.every(priced)).toBe(true);
    }

    const other = await startHarness({}, new ManualClock(h.clock.t));
    try {
      const asins = findAsins(h.sim, 'US', 'found', 200);
      for (const a of asins) expect(JSON.stringify(item(other, 'US', a))).toBe(JSON.stringify(item(h, 'US', a)));
    } finally {
      await other.close();
    }
  });
});
