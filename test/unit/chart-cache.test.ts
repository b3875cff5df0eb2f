import { describe, expect, it } from 'vitest';
import { ChartCache, type Chart } from '../../src/catalog/chart-cache.js';

const chart = (n: number): Chart => ({ body: Buffer.from(`<svg>${n}</svg>`), etag: `"${n}"` });
const options = { maxEntries: 20, maxBytes: 1_000_000, ttlMs: 60_000, perAccount: 5 };

describe('ChartCache', () => {
  it('lets one account hold only its share: its new charts push out its own oldest, never the others’', async () => {
    const cache = new ChartCache(options);
    for (let i = 0; i < 15; i++) await cache.draw(`other-${i}`, `account-${i % 3}`, async () => chart(i));
    expect(cache.size).toBe(15);
    for (let i = 0; i < 100; i++) await cache.draw(`greedy-${i}`, 'greedy', async () => chart(i));
    expect(cache.size).toBe(20);
    for (let i = 0; i < 15; i++) expect(cache.get(`other-${i}`)).toBeDefined();
    expect([...Array(100).keys()].filter((i) => cache.get(`greedy-${i}`)).map(String)).toEqual(['95', '96', '97', '98', '99']);
  });

  it('draws a chart once for requests that come while it is drawn, and draws again after a failed render', async () => {
    const cache = new ChartCache(options);
    let renders = 0;
    let finish!: (c: Chart) => void;
    const first = cache.draw('k', 'a', () => {
      renders++;
      return new Promise<Chart>((resolve) => (finish = resolve));
    });
    const joined = cache.drawing('k');
    const second = cache.draw('k', 'b', async () => {
      renders++;
      return chart(2);
    });
    finish(chart(1));
    expect(await first).toEqual(chart(1));
    expect(await second).toEqual(chart(1));
    expect(await joined).toEqual(chart(1));
    expect(renders).toBe(1);

    await expect(cache.draw('f', 'a', () => Promise.reject(new Error('vega')))).rejects.toThrow('vega');
    expect(await cache.drawing('f')).toBeUndefined();
    expect(await cache.draw('f', 'a', async () => chart(3))).toEqual(chart(3));
  });
});
