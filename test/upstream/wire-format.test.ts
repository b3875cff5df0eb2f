/**
 * The client's requests checked against the documented wire format by a bare
 * node:http server that records raw requests: nothing here shares code with the simulator.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import { UpstreamRateLimitedError, UpstreamUnavailableError } from '../../src/core/errors.js';
import { createUpstream, createUpstreamShared, type UpstreamShared } from '../../src/upstream/factory.js';
import type { UpstreamPort } from '../../src/upstream/port.js';

interface Recorded {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  remotePort: number;
}

const A = 'B0AAAAAAAA';
const B = 'B0BBBBBBBB';
const C = 'B0CCCCCCCC';
const D = 'B0DDDDDDDD';
const E = 'B0EEEEEEEE';
const usd = (amount: number) => ({ money: { amount, currency: 'USD', displayAmount: `$${amount.toFixed(2)}` } });

/** Hand-written answers in the Creators API's shapes. */
function answer(path: string, body: Record<string, unknown>): { status: number; headers?: Record<string, string>; json: unknown } {
  if (path === '/lwa/token') return { status: 200, json: { access_token: 'Atza|tok-lwa', token_type: 'bearer', expires_in: 3600 } };
  if (path === '/cognito/token') return { status: 200, json: { access_token: 'tok-cog', token_type: 'Bearer', expires_in: 3600 } };
  if (path === '/catalog/v1/getItems') {
    const ids = body.itemIds as string[];
    if (ids.includes('B0THROTTLE'))
      return { status: 429, json: { type: 'ThrottleException', message: 'Request was denied due to request throttling.' } };
    if (ids.includes('B0THROTTL7')) return { status: 429, headers: { 'retry-after': '7' }, json: { message: 'slow down', quotaCode: 'q' } };
    return {
      status: 200,
      json: {
        // Out of request order, failed ids only under errors: a positional client would mix them up.
        itemsResult: {
          items: [
            { asin: E, detailPageURL: `https://www.amazon.com/dp/${E}`, offersV2: { listings: [] } },
            {
              asin: C,
              offersV2: {
                listings: [{ price: usd(30) }, { price: usd(12.34), availability: { type: 'IN_STOCK_SCARCE' } }, { price: usd(18) }],
              },
            },
            {
              asin: A,
              itemInfo: {
                title: { displayValue: 'Widget' },
                externalIds: { eans: { displayValues: ['0012345678905'] }, upcs: { displayValues: ['012345678905'] } },
              },
              offersV2: {
                listings: [{ price: usd(19.99) }, { price: usd(27.5), isBuyBoxWinner: true, availability: { type: 'IN_STOCK' } }],
              },
              browseNodeInfo: { websiteSalesRank: { salesRank: 42 }, browseNodes: [{ id: '77', displayName: 'Widgets' }] },
            },
          ],
        },
        errors: [
          { code: 'InvalidParameterValue', message: `The ItemId ${B} provided in the request is invalid.` },
          { code: 'ItemNotAccessible', message: `The ItemId ${D} is not accessible through the Creators API.` },
        ],
      },
    };
  }
  if (path === '/catalog/v1/searchItems') {
    if (body.keywords === '0000000000000') return { status: 200, json: { searchResult: { items: [{ asin: 42 }] } } };
    if (body.keywords === '4901234567894') return { status: 200, json: { searchResult: { items: 'none' } } };
    if (body.keywords === '4006381333931') return { status: 200, json: { errors: [{ code: 'NoResults', message: 'No results.' }] } };
    return {
      status: 200,
      json: {
        searchResult: {
          totalResultCount: 25,
          items: [{ asin: A }, { asin: C, itemInfo: { externalIds: { eans: { displayValues: ['4900000000003'] } } } }],
        },
      },
    };
  }
  if (path === '/catalog/v1/getBrowseNodes') {
    return {
      status: 200,
      json: {
        browseNodesResult: {
          browseNodes: [
            {
              id: '123',
              displayName: 'Tools',
              ancestor: { id: '12', displayName: 'Home' },
              children: [{ id: '1230', displayName: 'Saws' }],
            },
          ],
        },
      },
    };
  }
  return { status: 404, json: { message: 'no' } };
}

describe('requests on the wire', () => {
  let server: Server;
  let base: string;
  const seen: Recorded[] = [];
  let shared: UpstreamShared;
  let jp: UpstreamPort;
  let us: UpstreamPort;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString('utf8')));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, remotePort: req.socket.remotePort ?? 0 });
        let parsed: Record<string, unknown> = {};
        try {
          parsed = JSON.parse(body) as Record<string, unknown>;
        } catch {
          // token requests may be forms
        }
        const a = answer(req.url ?? '', parsed);
        res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers }).end(JSON.stringify(a.json));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const config = loadConfig({
      LOG_LEVEL: 'silent',
      UPSTREAM: 'creators',
      CREATORS_API_URL: base,
      CREATORS_CREDENTIAL_ID_JP: 'id-jp',
      CREATORS_CREDENTIAL_SECRET_JP: 'secret-jp',
      CREATORS_PARTNER_TAG_JP: 'tag-22',
      CREATORS_TOKEN_URL_JP: `${base}/lwa/token`,
      CREATORS_CREDENTIAL_ID_US: 'id-us',
      CREATORS_CREDENTIAL_SECRET_US: 'secret-us',
      CREATORS_CREDENTIAL_VERSION_US: '2.1',
      CREATORS_PARTNER_TAG_US: 'tag-20',
      CREATORS_TOKEN_URL_US: `${base}/cognito/token`,
    });
    shared = createUpstreamShared();
    jp = createUpstream(config, 'JP', { shared });
    us = createUpstream(config, 'US', { shared });
  });
  afterAll(async () => {
    await shared.close();
    await new Promise<void>((r) => server.close(() => r()));
  });
  beforeEach(() => {
    seen.length = 0;
  });

  const catalogCalls = () => seen.filter((r) => r.path.startsWith('/catalog/'));
  const json = (r: Recorded) => JSON.parse(r.body) as Record<string, unknown>;
  const checkCommon = (r: Recorded, market: string, auth: string) => {
    expect(r.method).toBe('POST');
    expect(r.headers.authorization).toBe(auth);
    expect(r.headers['x-marketplace']).toBe(market);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    const body = json(r);
    for (const key of Object.keys(body)) expect(key).toMatch(/^[a-z][A-Za-z]*$/); // lowerCamel only
    for (const gone of ['marketplace', 'partnerType', 'itemIdType', 'Marketplace', 'PartnerTag']) expect(body).not.toHaveProperty(gone);
  };

  it('v3.x: JSON token request to the version endpoint, then getItems with a Bearer token', async () => {
    const res = await jp.getItems([A, 'b0bbbbbbbb', C, D, E]);
    const token = seen.find((r) => r.path === '/lwa/token')!;
    expect(token.method).toBe('POST');
    expect(token.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(token.body)).toEqual({
      grant_type: 'client_credentials',
      client_id: 'id-jp',
      client_secret: 'secret-jp',
      scope: 'creatorsapi::default',
    });
    const [call] = catalogCalls();
    expect(call!.path).toBe('/catalog/v1/getItems');
    checkCommon(call!, 'www.amazon.co.jp', 'Bearer Atza|tok-lwa');
    const body = json(call!);
    expect(body.partnerTag).toBe('tag-22');
    expect(body.itemIds).toEqual([A, B, C, D, E]);
    expect(body.resources).toEqual(
      expect.arrayContaining([
        'itemInfo.title',
        'itemInfo.externalIds',
        'offersV2.listings.price',
        'offersV2.listings.isBuyBoxWinner',
        'offersV2.listings.availability',
      ]),
    );
    expect(Object.keys(body).sort()).toEqual(['itemIds', 'partnerTag', 'resources']);

    // Matched by ASIN, not by position.
    expect(res.outcomes).toEqual({ [A]: 'found', [B]: 'not_found', [C]: 'found', [D]: 'not_accessible', [E]: 'found' });
    expect(res.items.map((i) => i.asin)).toEqual([A, C, E]);
    const [a, c, e] = res.items;
    expect(a).toMatchObject({
      title: 'Widget',
      price: { amount: 2750, currency: 'USD' },
      availability: 'in_stock',
      salesRank: 42,
      eans: ['0012345678905'],
      browseNodes: [{ id: '77', name: 'Widgets' }],
      offers: 2,
    });
    expect(c).toMatchObject({ price: { amount: 1234, currency: 'USD' }, availability: 'in_stock', title: null, eans: [] });
    expect(e).toMatchObject({ price: null, availability: 'out_of_stock', url: `https://www.amazon.com/dp/${E}` });
  });

  it('v2.x: form token request with the Cognito scope; Authorization names the version', async () => {
    await us.getItems([A]);
    const token = seen.find((r) => r.path === '/cognito/token')!;
    expect(token.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(Object.fromEntries(new URLSearchParams(token.body))).toEqual({
      grant_type: 'client_credentials',
      client_id: 'id-us',
      client_secret: 'secret-us',
      scope: 'creatorsapi/default',
    });
    checkCommon(catalogCalls()[0]!, 'www.amazon.com', 'Bearer tok-cog, Version 2.1');
  });

  it('findByCode: searchItems with the code as keywords, keeping only items that list it', async () => {
    const res = await jp.findByCode('0012345678905', 1);
    const [call] = catalogCalls();
    expect(call!.path).toBe('/catalog/v1/searchItems');
    checkCommon(call!, 'www.amazon.co.jp', 'Bearer Atza|tok-lwa');
    expect(json(call!)).toMatchObject({ partnerTag: 'tag-22', keywords: '0012345678905', searchIndex: 'All', itemPage: 1, itemCount: 10 });
    expect(res.items.map((i) => i.asin)).toEqual([]); // the search answer's items do not list the code
    const none = await jp.findByCode('4006381333931', 1); // 200 with errors[NoResults]
    expect(none.items).toEqual([]);
  });

  it('browseNode: searchItems with browseNodeId and itemPage; hasMore from totalResultCount', async () => {
    const page2 = await jp.browseNode('123', 2);
    const page3 = await jp.browseNode('123', 3);
    const [c2, c3] = catalogCalls();
    expect(json(c2!)).toEqual({ partnerTag: 'tag-22', browseNodeId: '123', itemCount: 10, itemPage: 2, resources: expect.any(Array) });
    expect(json(c3!)).toMatchObject({ browseNodeId: '123', itemPage: 3 });
    expect(page2).toMatchObject({ totalResults: 25, hasMore: true });
    expect(page3.hasMore).toBe(false);
  });

  it('getBrowseNodes: browseNodeIds and the ancestor/children resources', async () => {
    const [node] = await jp.getBrowseNodes(['123']);
    const [call] = catalogCalls();
    expect(call!.path).toBe('/catalog/v1/getBrowseNodes');
    expect(json(call!)).toEqual({
      partnerTag: 'tag-22',
      browseNodeIds: ['123'],
      resources: ['browseNodes.ancestor', 'browseNodes.children'],
    });
    expect(node).toEqual({ id: '123', name: 'Tools', isRoot: false, parentId: '12', children: [{ id: '1230', name: 'Saws' }] });
  });

  it('429: retry-after from the header, else one interval of QUOTA_RPS (1/s here: a second)', async () => {
    const plain = await jp.getItems(['B0THROTTLE']).catch((e: unknown) => e);
    expect(plain).toBeInstanceOf(UpstreamRateLimitedError);
    expect((plain as UpstreamRateLimitedError).retryAfterMs).toBe(1000);
    const told = await jp.getItems(['B0THROTTL7']).catch((e: unknown) => e);
    expect((told as UpstreamRateLimitedError).retryAfterMs).toBe(7000);
  });

  it('keeps the connection alive between calls and reuses the cached token', async () => {
    for (let i = 0; i < 6; i++) await jp.getItems([A]);
    expect(seen.filter((r) => r.path.endsWith('/token'))).toHaveLength(0);
    // undici may open a second socket while the first is being released; without keep-alive every
    // call would have its own.
    const perSocket = new Map<number, number>();
    for (const r of catalogCalls()) perSocket.set(r.remotePort, (perSocket.get(r.remotePort) ?? 0) + 1);
    expect(Math.max(...perSocket.values())).toBeGreaterThan(1);
  });

  it('an item that does not match the schema is left out and reported; an answer that does not is an UpstreamUnavailableError', async () => {
    const page = await jp.findByCode('0000000000000', 1);
    expect(page.items).toEqual([]);
    expect(page.dropped).toEqual([{ member: 'item', reason: 'malformed' }]);
    const err = await jp.findByCode('4901234567894', 1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect((err as Error).message).toMatch(/searchResult\.items/);
  });
});
