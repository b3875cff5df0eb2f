/**
 * Issue 15, items 9-11: the client against answers the real service may give but our simulator
 * used not to: members the SDK marks optional left out, malformed members, 404s that are not "no
 * results", 429s without Retry-After or with a daily quotaCode, InvalidPartnerTag, and the
 * User-Agent it sends. A bare node:http server plays the service, so nothing here shares code with
 * the simulator.
 */
import { classShares } from '../../src/core/quota-classes.js';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import { loadConfig, type Config } from '../../config/env.js';
import * as errors from '../../src/core/errors.js';
import { DayQuotaSpentError, UnrecoverableError, UpstreamRateLimitedError, UpstreamUnavailableError } from '../../src/core/errors.js';
import { Metrics } from '../../src/core/metrics.js';
import type { DailyUsage } from '../../src/quota/daily-usage.js';
import { governPort } from '../../src/quota/governed-port.js';
import { testBreakers } from '../helpers/breakers.js';
import { QuotaGovernor } from '../../src/quota/governor.js';
import { createUpstream, createUpstreamShared, type UpstreamShared } from '../../src/upstream/factory.js';
import { normalizeItem } from '../../src/upstream/creators/normalize.js';
import { readItems } from '../../src/upstream/creators/read.js';
import { instrumentPort } from '../../src/upstream/instrumented.js';
import type { DroppedMember, UpstreamPort } from '../../src/upstream/port.js';
import { VERSION } from '../../src/version.js';
import { failureAction } from '../../jobs/failure.js';
import { uniqueName } from '../helpers/context.js';
import { dropKeys } from '../helpers/redis-keys.js';

interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as it is. */
  body: unknown;
}
type Route = (path: string, body: Record<string, unknown>) => Reply | undefined;

interface Seen {
  path: string;
  headers: IncomingHttpHeaders;
}

/** The error class the fix adds (looked up by name, so that this file runs before it exists). */
const ConfigErrorClass = (): (new (...args: never[]) => Error) | undefined =>
  (errors as unknown as Record<string, new (...args: never[]) => Error>).UpstreamConfigError;

const asin = (n: number): string => `B0REAL${String(n).padStart(4, '0')}`;
const BATCH = Array.from({ length: 10 }, (_, i) => asin(i + 1));
const usd = (amount: number) => ({ money: { amount, currency: 'USD', displayAmount: `$${amount.toFixed(2)}` } });
const noAmount = { money: { displayAmount: 'See price in cart' } };

let server: Server;
let base: string;
let route: Route;
const seen: Seen[] = [];
const opened: UpstreamShared[] = [];

function tokenRoute(path: string): Reply | undefined {
  if (path === '/lwa/token') return { status: 200, body: { access_token: 'Atza|tok', token_type: 'bearer', expires_in: 3600 } };
  return undefined;
}

function configWith(extra: Record<string, string> = {}): Config {
  return loadConfig({
    LOG_LEVEL: 'silent',
    UPSTREAM: 'creators',
    COUNTRIES: 'JP',
    CREATORS_API_URL: base,
    CREATORS_CREDENTIAL_ID_JP: 'id-jp',
    CREATORS_CREDENTIAL_SECRET_JP: 'secret-jp',
    CREATORS_PARTNER_TAG_JP: 'tag-22',
    CREATORS_TOKEN_URL_JP: `${base}/lwa/token`,
    ...extra,
  });
}

/** A port of its own (its own token cache), so that every test sees its token request. */
function port(extra: Record<string, string> = {}): UpstreamPort {
  const shared = createUpstreamShared();
  opened.push(shared);
  return createUpstream(configWith(extra), 'JP', { shared });
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString('utf8')));
    req.on('end', () => {
      const path = req.url ?? '';
      seen.push({ path, headers: req.headers });
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // a form
      }
      const reply = tokenRoute(path) ?? route(path, body) ?? { status: 500, body: { message: 'no route in this test' } };
      const json = typeof reply.body !== 'string';
      res
        .writeHead(reply.status, { 'content-type': json ? 'application/json' : 'text/html; charset=utf-8', ...reply.headers })
        .end(json ? JSON.stringify(reply.body) : reply.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  seen.length = 0;
  route = () => undefined;
});

describe('item 9: optional and malformed members are dropped one by one, never the batch', () => {
  const getItemsAnswer = {
    itemsResult: {
      items: [
        // The Buy Box listing shows no amount: the next usable listing (the cheapest) gives the price.
        {
          asin: asin(1),
          itemInfo: { title: { displayValue: 'Priced elsewhere' } },
          offersV2: {
            listings: [
              { isBuyBoxWinner: true, price: noAmount, availability: { type: 'IN_STOCK' } },
              { price: usd(20) },
              { price: usd(15), availability: { type: 'IN_STOCK_SCARCE' } },
            ],
          },
        },
        // The only listing shows no amount: no usable price, but it is on sale.
        { asin: asin(2), offersV2: { listings: [{ price: noAmount, availability: { type: 'IN_STOCK' } }] } },
        // A browse node without its id is left out; the other is kept.
        {
          asin: asin(3),
          browseNodeInfo: { browseNodes: [{ displayName: 'No id' }, { id: '77', displayName: 'Widgets' }] },
          offersV2: { listings: [{ price: { money: { currency: 'USD' } } }, { price: usd(9) }] },
        },
        // A listing whose amount is a string is malformed: that listing goes, the item stays.
        { asin: asin(4), offersV2: { listings: [{ price: { money: { amount: '12.30', currency: 'USD' } } }, { price: usd(13) }] } },
        // A malformed title: the title goes, the item stays.
        { asin: asin(5), itemInfo: { title: { displayValue: 42 }, byLineInfo: { brand: { displayValue: 'Acme' } } } },
        // An item without its ASIN, and one whose ASIN is not a string: both dropped.
        { itemInfo: { title: { displayValue: 'ghost' } } },
        { asin: 42, itemInfo: { title: { displayValue: 'numbered' } } },
        { asin: asin(6).toLowerCase(), offersV2: { listings: [] } },
      ],
    },
    errors: [
      { code: 'InvalidParameterValue', message: `The ItemId ${asin(7)} provided in the request is invalid.` },
      { code: 5, message: 'unreadable' },
    ],
  };

  it('getItems keeps every readable item, prices from usable listings, and reports what it dropped', async () => {
    route = (path) => (path === '/catalog/v1/getItems' ? { status: 200, body: getItemsAnswer } : undefined);
    const res = await port().getItems(BATCH);
    expect(res.items.map((i) => i.asin)).toEqual([asin(1), asin(2), asin(3), asin(4), asin(5), asin(6)]);
    const [a, b, c, d, e] = res.items;
    expect(a).toMatchObject({ title: 'Priced elsewhere', price: { amount: 1500, currency: 'USD' }, availability: 'in_stock' });
    expect(b).toMatchObject({ price: null, availability: 'in_stock' });
    expect(c).toMatchObject({ price: { amount: 900, currency: 'USD' }, browseNodes: [{ id: '77', name: 'Widgets' }] });
    expect(d).toMatchObject({ price: { amount: 1300, currency: 'USD' } });
    expect(e).toMatchObject({ title: null, brand: 'Acme' });
    // ASINs that neither an item nor an error accounts for, while the answer held items without a
    // readable ASIN, are unknown: no outcome, so nothing is written for them.
    expect(res.outcomes).toEqual({
      [asin(1)]: 'found',
      [asin(2)]: 'found',
      [asin(3)]: 'found',
      [asin(4)]: 'found',
      [asin(5)]: 'found',
      [asin(6)]: 'found',
      [asin(7)]: 'not_found',
    });
    const dropped = (res as { dropped?: { member: string; reason: string }[] }).dropped ?? [];
    expect([...dropped].sort((x, y) => `${x.member}${x.reason}`.localeCompare(`${y.member}${y.reason}`))).toEqual([
      { member: 'browse_node', reason: 'missing_id' },
      { member: 'error', reason: 'malformed' },
      { member: 'field', reason: 'malformed' },
      { member: 'item', reason: 'malformed' },
      { member: 'item', reason: 'missing_id' },
      { member: 'listing', reason: 'malformed' },
    ]);
  });

  it('the instrumented port counts the dropped members (shelfwatch_upstream_dropped_total)', async () => {
    route = (path) => (path === '/catalog/v1/getItems' ? { status: 200, body: getItemsAnswer } : undefined);
    const metrics = new Metrics({ defaultMetrics: false });
    const jp = instrumentPort(port(), metrics);
    await jp.getItems(BATCH);
    await jp.getItems(BATCH);
    const metric = metrics.registry.getSingleMetric('shelfwatch_upstream_dropped_total');
    expect(metric).toBeDefined();
    const values = (await metric!.get()).values;
    const of = (member: string, reason: string) =>
      values.find((v) => v.labels.member === member && v.labels.reason === reason && v.labels.country === 'JP')?.value;
    expect(of('item', 'missing_id')).toBe(2);
    expect(of('listing', 'malformed')).toBe(2);
    expect(values.every((v) => v.labels.operation === 'getItems')).toBe(true);
    // A second port on the same registry shares the counter instead of failing to register it.
    expect(() => instrumentPort(port(), metrics)).not.toThrow();
  });

  it('searchItems and getBrowseNodes: one item or node without its id does not fail the page', async () => {
    route = (path, body) => {
      if (path === '/catalog/v1/searchItems' && body.keywords) {
        const ean = body.keywords as string;
        return {
          status: 200,
          body: {
            searchResult: {
              items: [
                { asin: asin(1), itemInfo: { externalIds: { eans: { displayValues: [ean] } } } },
                { itemInfo: { externalIds: { eans: { displayValues: [ean] } } } },
              ],
            },
          },
        };
      }
      if (path === '/catalog/v1/getBrowseNodes') {
        return {
          status: 200,
          body: {
            browseNodesResult: {
              browseNodes: [
                { displayName: 'nameless' },
                { id: '123', displayName: 'Tools', children: [{ id: '1230', displayName: 'Saws' }, { displayName: 'no id' }] },
              ],
            },
          },
        };
      }
      return undefined;
    };
    const jp = port();
    const found = await jp.findByCode('4006381333931', 1);
    expect(found.items.map((i) => i.asin)).toEqual([asin(1)]);
    const nodes = await jp.getBrowseNodes(['123', '124']);
    expect(nodes.map((n) => n.id)).toEqual(['123']);
    expect(nodes[0]!.children).toEqual([{ id: '1230', name: 'Saws' }]);
  });

  it('several malformed listings in a row are each left out, and the item kept', () => {
    const dropped: DroppedMember[] = [];
    const [item] = readItems(
      [
        {
          asin: asin(1),
          offersV2: { listings: [{ price: { money: { amount: '1' } } }, { price: { money: { amount: '2' } } }, { price: usd(3) }] },
        },
      ],
      dropped,
    );
    expect(normalizeItem(item!).price).toEqual({ amount: 300, currency: 'USD' });
    expect(dropped).toEqual([
      { member: 'listing', reason: 'malformed' },
      { member: 'listing', reason: 'malformed' },
    ]);
  });

  it('an answer that is not the API at all (HTML with 200) is still unreadable, and retryable', async () => {
    route = () => ({ status: 200, body: '<html><body>Welcome to nginx!</body></html>' });
    const err = await port()
      .getItems([asin(1)])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
  });
});

describe('item 10: a 404 is "no results" only when its body says so', () => {
  it('404 ResourceNotFound (body or x-amzn-ErrorType) is an empty result', async () => {
    route = (path, body) => {
      if (path !== '/catalog/v1/searchItems') return undefined;
      if (body.keywords === '4006381333931')
        return {
          status: 404,
          body: {
            type: 'ResourceNotFoundException',
            message: 'No results found.',
            resourceId: '4006381333931',
            resourceType: 'SearchResult',
          },
        };
      return { status: 404, headers: { 'x-amzn-ErrorType': 'ResourceNotFoundException:http://internal.amazon.com/' }, body: {} };
    };
    const jp = port();
    expect((await jp.findByCode('4006381333931', 1)).items).toEqual([]);
    expect((await jp.browseNode('123', 1)).items).toEqual([]);
  });

  it.each([
    ['an HTML page', { status: 404, body: '<html><head><title>404 Not Found</title></head><body>Not Found</body></html>' }],
    ['an unknown JSON body', { status: 404, body: { message: 'Not Found' } }],
    ['no body', { status: 404, body: '' }],
  ])('a routing 404 (%s) is a configuration error that stops the country', async (_what, reply) => {
    route = (path) => (path.startsWith('/catalog/') ? (reply as Reply) : undefined);
    const err = await port()
      .findByCode('4006381333931', 1)
      .catch((e: unknown) => e);
    expect(ConfigErrorClass()).toBeDefined();
    expect(err).toBeInstanceOf(ConfigErrorClass()!);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect((err as Error).message).toMatch(/CREATORS_API_URL/);
    expect((err as Error).message).toContain(`${base}/catalog/v1/searchItems`);
    expect(failureAction(err, undefined)).toEqual({ action: 'stop_country' });
  });

  it('a token endpoint that is not one (404) is a configuration error naming CREATORS_TOKEN_URL_JP', async () => {
    route = (path) => (path === '/wrong/token' ? { status: 404, body: '<html><body>Not Found</body></html>' } : undefined);
    const err = await port({ CREATORS_TOKEN_URL_JP: `${base}/wrong/token` })
      .getItems([asin(1)])
      .catch((e: unknown) => e);
    expect(ConfigErrorClass()).toBeDefined();
    expect(err).toBeInstanceOf(ConfigErrorClass()!);
    expect((err as Error).message).toMatch(/CREATORS_TOKEN_URL_JP/);
    expect(failureAction(err, undefined)).toEqual({ action: 'stop_country' });
  });
});

describe('item 11: 429s, InvalidPartnerTag, User-Agent', () => {
  const throttleWithout = (): Reply => ({
    status: 429,
    body: { type: 'ThrottleException', message: 'Request was denied due to request throttling.' },
  });

  it("a 429 without Retry-After waits one interval of the country's quota (1/Q), not a fixed second", async () => {
    route = throttleWithout;
    const slow = await port({ QUOTA_RPS: '0.5' })
      .getItems([asin(1)])
      .catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(UpstreamRateLimitedError);
    expect((slow as UpstreamRateLimitedError).retryAfterMs).toBe(2_000);
    const fast = await port({ QUOTA_RPS_JP: '4' })
      .getItems([asin(1)])
      .catch((e: unknown) => e);
    expect((fast as UpstreamRateLimitedError).retryAfterMs).toBe(250);
    // A Retry-After the service sends is still what it says.
    route = () => ({ ...throttleWithout(), headers: { 'retry-after': '3' } });
    const told = await port({ QUOTA_RPS: '0.5' })
      .getItems([asin(1)])
      .catch((e: unknown) => e);
    expect((told as UpstreamRateLimitedError).retryAfterMs).toBe(3_000);
  });

  describe('through the governed port (a real Redis)', () => {
    let redis: Redis;
    const prefix = uniqueName('swt_real');
    const usage = { record() {}, settled: async () => undefined, read: async () => ({ calls: 0, forced: 0 }) } as unknown as DailyUsage;
    const governor = (perSecond: number): QuotaGovernor =>
      new QuotaGovernor(redis, prefix, {
        quotas: { JP: { perSecond, burst: 1, perDay: 1_000 } },
        dayTimeZone: 'UTC',
        shares: classShares({ forced: 0.3 }),
        forcedReserve: 0,
        usage,
      });
    beforeAll(() => {
      redis = new Redis(inject('redisUrl'));
    });
    afterAll(async () => {
      await dropKeys(redis, prefix);
      redis.disconnect();
    });

    it('holds the pace for exactly one interval when Q < 1 and the 429 says nothing, and the job waits as long', async () => {
      route = throttleWithout;
      const g = governor(0.5);
      const hold = vi.spyOn(g, 'hold');
      const jp = governPort(port({ QUOTA_RPS: '0.5' }), 'JP', { governor: g, breakers: testBreakers(redis, prefix).breakers });
      const err = await jp.getItems([asin(1)]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UpstreamRateLimitedError);
      expect(hold.mock.calls.map((c) => c[1])).toEqual([2_000, 2_000, 2_000]);
      expect(failureAction(err, undefined)).toEqual({ action: 'wait', ms: 2_000 });
      g.close();
    });

    it.each([
      ['quotaCode RequestsPerDay', { quotaCode: 'RequestsPerDay', serviceCode: 'creatorsapi' }],
      ['quotaCode TPD', { quotaCode: 'TPD' }],
      ['reason DailyQuotaExceeded (no quotaCode)', { reason: 'DailyQuotaExceeded' }],
    ])('a daily 429 (%s) marks the day spent', async (_what, extra) => {
      route = () => ({ status: 429, body: { type: 'ThrottleException', message: 'throttled', ...extra } });
      const g = governor(5);
      const jp = governPort(port(), 'JP', { governor: g, breakers: testBreakers(redis, prefix).breakers });
      await expect(jp.getItems([asin(1)])).rejects.toBeInstanceOf(DayQuotaSpentError);
      expect((await g.day('JP')).spent).toBe(true);
      await dropKeys(redis, prefix);
      g.close();
    });
  });

  it('400 InvalidPartnerTag stops the country with a message naming CREATORS_PARTNER_TAG_JP', async () => {
    route = () => ({
      status: 400,
      body: {
        type: 'ValidationException',
        reason: 'InvalidPartnerTag',
        message: 'The partner tag tag-22 is invalid for this marketplace.',
        fieldList: [{ name: 'partnerTag', message: 'invalid' }],
      },
    });
    const err = await port()
      .getItems([asin(1)])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect((err as { reason?: string }).reason).toBe('InvalidPartnerTag');
    expect((err as Error).message).toMatch(/CREATORS_PARTNER_TAG_JP/);
    expect(failureAction(err, undefined)).toEqual({ action: 'stop_country' });
  });

  it('sends User-Agent shelfwatch/<version> on the token request and on every catalog call', async () => {
    route = (path) => (path.startsWith('/catalog/') ? { status: 200, body: {} } : undefined);
    const jp = port();
    await jp.getItems([asin(1)]);
    await jp.getBrowseNodes(['123']);
    expect(seen.map((s) => s.path)).toEqual(['/lwa/token', '/catalog/v1/getItems', '/catalog/v1/getBrowseNodes']);
    for (const s of seen) expect(s.headers['user-agent']).toBe(`shelfwatch/${VERSION}`);
  });
});
