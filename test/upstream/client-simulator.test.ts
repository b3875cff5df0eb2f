import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamItemSchema } from '../../src/core/product.js';
import { UpstreamInvalidRequestError } from '../../src/core/errors.js';
import { eanCheckDigit } from '../../src/simulator/codes.js';
import { findAsins, startHarness, totalCalls, type SimHarness } from './helpers.js';

/** A valid EAN-13 from its first 12 digits. */
const eanOf = (first12: string): string => first12 + eanCheckDigit(first12);

describe('Creators client against the simulator, over HTTP', () => {
  let h: SimHarness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('getItems: a batch of 10 with two missing and one inaccessible ASIN, matched by ASIN', async () => {
    const found = findAsins(h.sim, 'JP', 'found', 7);
    const missing = findAsins(h.sim, 'JP', 'not_found', 2);
    const hidden = findAsins(h.sim, 'JP', 'not_accessible', 1);
    const batch = [found[0]!, missing[0]!, ...found.slice(1, 4), hidden[0]!, ...found.slice(4), missing[1]!];
    const jp = h.port('JP');
    const res = await jp.getItems(batch.map((a, i) => (i % 2 ? a.toLowerCase() : a)));
    expect(Object.keys(res.outcomes)).toEqual(batch);
    for (const a of found) expect(res.outcomes[a]).toBe('found');
    expect(res.outcomes[missing[0]!]).toBe('not_found');
    expect(res.outcomes[missing[1]!]).toBe('not_found');
    expect(res.outcomes[hidden[0]!]).toBe('not_accessible');
    // Request order, although the simulator answers in its own order.
    expect(res.items.map((i) => i.asin)).toEqual(batch.filter((a) => found.includes(a)));
    for (const item of res.items) {
      expect(upstreamItemSchema.parse(item)).toBeTruthy();
      expect(item.title).toMatch(/[\u3040-\u30ff\u4e00-\u9fff]/); // Japanese on amazon.co.jp
      expect(item.url).toBe(`https://www.amazon.co.jp/dp/${item.asin}?tag=shelfwatch-22&linkCode=ogi&th=1&psc=1`);
      if (item.price) expect(item.price.currency).toBe('JPY');
    }
    expect(h.sim.stats().countries.JP?.getItems).toMatchObject({ calls: 1, items: 7 });
  });

  it('getItems in the US: English titles, USD prices in cents', async () => {
    const asins = findAsins(h.sim, 'US', 'found', 10, 500);
    const res = await h.port('US').getItems(asins);
    expect(res.items).toHaveLength(10);
    for (const item of res.items) {
      expect(item.title).toMatch(/^[\x20-\x7e]+$/);
      if (item.price) {
        expect(item.price.currency).toBe('USD');
        expect(Number.isInteger(item.price.amount)).toBe(true);
      }
    }
    expect(res.items.some((i) => i.price !== null)).toBe(true);
  });

  it('findByCode: an EAN listed by two ASINs gives exactly those two, unrelated hits left out', async () => {
    let ean = '';
    for (let n = 0; !ean; n++) {
      const code = eanOf(`49${String(n).padStart(10, '0')}`);
      // Pick one the simulator also pads with unrelated results, to prove they are filtered.
      if (h.sim.catalog.asinsForEan('JP', code).length === 2 && h.sim.catalog.search('JP', code).length > 2) ean = code;
    }
    const res = await h.port('JP').findByCode(ean, 1);
    expect(res.ean).toBe(ean);
    expect(res.items.map((i) => i.asin).sort()).toEqual(h.sim.catalog.asinsForEan('JP', ean).sort());
    for (const item of res.items) expect(item.eans).toContain(ean);
    expect(res.hasMore).toBe(false);
  });

  it('findByCode: one call per page; more pages only while a full page listed nothing else', async () => {
    // A code more ASINs list than one page holds, its own items ranked first.
    let ean = '';
    for (let n = 0; !ean; n++) {
      const code = eanOf(`49${String(n).padStart(10, '0')}`);
      const own = h.sim.catalog.asinsForEan('JP', code);
      if (
        own.length > 20 &&
        h.sim.catalog
          .search('JP', code)
          .slice(0, own.length)
          .every((a) => own.includes(a))
      )
        ean = code;
    }
    const own = h.sim.catalog.asinsForEan('JP', ean);
    const calls0 = totalCalls(h.sim);
    const pages = [];
    for (let page = 1; ; page++) {
      const res = await h.port('JP').findByCode(ean, page);
      expect(res.page).toBe(page);
      pages.push(res);
      if (!res.hasMore) break;
    }
    expect(pages.map((r) => r.items.length)).toEqual([10, 10, own.length - 20]);
    expect(totalCalls(h.sim) - calls0).toBe(3);
    expect(pages.flatMap((r) => r.items.map((i) => i.asin)).sort()).toEqual([...own].sort());
  });

  it('findByCode: a code nobody lists gives no items (404 from the service)', async () => {
    let ean = '';
    for (let n = 0; !ean; n++) {
      const code = eanOf(`45${String(n).padStart(10, '0')}`);
      if (h.sim.catalog.search('JP', code).length === 0) ean = code;
    }
    expect((await h.port('JP').findByCode(ean, 1)).items).toEqual([]);
  });

  it('browseNode walks a full node to page 10 and stops there', async () => {
    let node = '';
    for (let n = 1000; !node; n++) if (h.sim.catalog.browse('US', String(n)).length === 100) node = String(n);
    const us = h.port('US');
    const seen = new Set<string>();
    let page = 1;
    for (;;) {
      const res = await us.browseNode(node, page);
      expect(res.items).toHaveLength(10);
      for (const i of res.items) seen.add(i.asin);
      if (!res.hasMore) break;
      page++;
    }
    expect(page).toBe(10);
    expect(seen.size).toBe(100);
    expect([...seen]).toEqual(h.sim.catalog.browse('US', node));
  });

  it('browseNode on a short node reports no more after its last page', async () => {
    let node = '';
    for (let n = 2000; !node; n++) {
      const len = h.sim.catalog.browse('JP', String(n)).length;
      if (len > 10 && len < 20) node = String(n);
    }
    const jp = h.port('JP');
    const first = await jp.browseNode(node, 1);
    expect(first.hasMore).toBe(true);
    const second = await jp.browseNode(node, 2);
    expect(second.hasMore).toBe(false);
    expect(second.items.length).toBe(first.totalResults! - 10);
  });

  it('getBrowseNodes returns parent and children', async () => {
    const [node] = await h.port('JP').getBrowseNodes(['2127209051']);
    expect(node).toMatchObject({ id: '2127209051', parentId: '212720905', isRoot: false });
    expect(node!.name).toMatch(/[\u3040-\u30ff\u4e00-\u9fff]/);
    for (const c of node!.children) expect(c.id.startsWith('2127209051')).toBe(true);
  });

  it('invalid batches are refused before any request is sent', async () => {
    const jp = h.port('JP');
    const callsBefore = totalCalls(h.sim);
    const tokensBefore = h.sim.stats().tokens.issued;
    const ok = findAsins(h.sim, 'JP', 'found', 11);
    const bad: [string, () => Promise<unknown>][] = [
      ['eleven ASINs', () => jp.getItems(ok)],
      ['no ASIN', () => jp.getItems([])],
      ['a duplicate', () => jp.getItems([ok[0]!, ok[1]!, ok[0]!.toLowerCase()])],
      ['a malformed ASIN', () => jp.getItems([ok[0]!, 'B0SHORT'])],
      ['a bad check digit', () => jp.findByCode('4901234567890', 1)],
      ['letters in an EAN', () => jp.findByCode('49012345678AB', 1)],
      ['search page 11', () => jp.findByCode('4901234567894', 11)],
      ['page 11', () => jp.browseNode('2127209051', 11)],
      ['page 0', () => jp.browseNode('2127209051', 0)],
      ['a non-numeric node', () => jp.browseNode('abc', 1)],
    ];
    for (const [what, call] of bad) await expect(call(), what).rejects.toBeInstanceOf(UpstreamInvalidRequestError);
    expect(totalCalls(h.sim)).toBe(callsBefore);
    expect(h.sim.stats().tokens.issued).toBe(tokensBefore);
  });
});
