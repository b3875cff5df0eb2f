/**
 * Every marketplace through the product's client against the simulator: the x-marketplace host
 * picks the country, the partner tag must be of that country's region, and prices come in its
 * currency's minor units.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COUNTRY_CODES } from '../../config/countries.js';
import { upstreamItemSchema } from '../../src/core/product.js';
import { UnrecoverableError } from '../../src/core/errors.js';
import { MARKETPLACES } from '../../src/upstream/marketplaces.js';
import { findAsins, startHarness, type SimHarness } from './helpers.js';

describe('Creators client against the simulator, in every marketplace', () => {
  let h: SimHarness;
  beforeAll(async () => {
    h = await startHarness({ COUNTRIES: COUNTRY_CODES.join(',') });
  });
  afterAll(() => h.close());

  it('getItems in DE: amazon.de links with a -21 tag, EUR prices in cents', async () => {
    const asins = findAsins(h.sim, 'DE', 'found', 10);
    const res = await h.port('DE').getItems(asins);
    expect(res.items.map((i) => i.asin)).toEqual(asins);
    for (const item of res.items) {
      expect(upstreamItemSchema.parse(item)).toBeTruthy();
      expect(item.url).toBe(`https://www.amazon.de/dp/${item.asin}?tag=shelfwatch-21&linkCode=ogi&th=1&psc=1`);
      if (item.price) {
        expect(item.price.currency).toBe('EUR');
        expect(Number.isInteger(item.price.amount)).toBe(true);
      }
    }
    expect(res.items.some((i) => i.price !== null)).toBe(true);
    expect(h.sim.stats().countries.DE?.getItems).toMatchObject({ calls: 1, items: 10 });
  });

  it('answers every country on its own host, in its currency', async () => {
    for (const cc of COUNTRY_CODES) {
      const asins = findAsins(h.sim, cc, 'found', 5, 1_000);
      const res = await h.port(cc).getItems(asins);
      expect(res.items, cc).toHaveLength(5);
      const { host, currency } = MARKETPLACES[cc];
      for (const item of res.items) {
        expect(item.url, cc).toMatch(new RegExp(`^https://${host.replaceAll('.', '\\.')}/dp/`));
        if (item.price) expect(item.price.currency, cc).toBe(currency);
      }
      expect(h.sim.stats().countries[cc]?.getItems?.calls, cc).toBeGreaterThan(0);
    }
  });

  it('has yen prices whole and the others in hundredths, however the marketplace writes them', () => {
    const prices = (cc: 'JP' | 'SE') =>
      findAsins(h.sim, cc, 'found', 50).flatMap((asin) => {
        const found = h.sim.catalog.lookup(cc, asin, h.clock.t, 'x');
        if (found.kind !== 'found') return [];
        const { listings } = found.item.offersV2 as { listings: { price?: { money?: { amount?: number; displayAmount?: string } } }[] };
        return listings.flatMap((l) => (l.price?.money?.amount === undefined ? [] : [l.price.money]));
      });
    for (const money of prices('JP')) expect(money.amount! % 10).toBe(0);
    const swedish = prices('SE');
    expect(swedish.some((m) => !Number.isInteger(m.amount))).toBe(true);
    for (const money of swedish) {
      expect(Math.round(money.amount! * 100) / 100).toBe(money.amount);
      expect(money.displayAmount).toMatch(/kr$/);
    }
  });
});

describe('partner tags of another region', () => {
  it('a North American tag (-20) on amazon.de is refused as InvalidPartnerTag', async () => {
    const h = await startHarness({ COUNTRIES: 'DE', CREATORS_PARTNER_TAG_DE: 'shelfwatch-20' });
    try {
      const err = await h
        .port('DE')
        .getItems(findAsins(h.sim, 'DE', 'found', 1))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnrecoverableError);
      expect((err as { reason?: string }).reason).toBe('InvalidPartnerTag');
    } finally {
      await h.close();
    }
  });
});
