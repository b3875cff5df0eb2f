import { describe, expect, it } from 'vitest';
import { TotalCache } from '../../src/catalog/total-cache.js';

/** A count whose calls are counted and whose answers are released by the test. */
function counter(values: number[]) {
  let calls = 0;
  return { fn: async () => values[calls++] ?? -1, calls: () => calls };
}

describe('TotalCache', () => {
  it('reuses a total for its TTL, per key, and counts again once it has expired', async () => {
    let now = 1_000;
    const cache = new TotalCache(10_000, { now: () => now });
    const a = counter([5, 7]);
    const b = counter([100]);
    expect(await cache.total('a', a.fn)).toBe(5);
    now += 9_999;
    expect(await cache.total('a', a.fn)).toBe(5);
    expect(await cache.total('b', b.fn)).toBe(100);
    expect(a.calls()).toBe(1);
    now += 2;
    expect(await cache.total('a', a.fn)).toBe(7);
    expect(a.calls()).toBe(2);
  });

  it('concurrent requests for one key share one count', async () => {
    const cache = new TotalCache(10_000);
    let release!: (n: number) => void;
    let calls = 0;
    const slow = () => {
      calls++;
      return new Promise<number>((r) => {
        release = r;
      });
    };
    const all = Promise.all(Array.from({ length: 5 }, () => cache.total('k', slow)));
    release(42);
    expect(await all).toEqual([42, 42, 42, 42, 42]);
    expect(calls).toBe(1);
  });

  it('a TTL of 0 counts every time', async () => {
    const cache = new TotalCache(0);
    const c = counter([1, 2, 3]);
    expect([await cache.total('k', c.fn), await cache.total('k', c.fn), await cache.total('k', c.fn)]).toEqual([1, 2, 3]);
  });

  it('a failed count is not kept', async () => {
    const cache = new TotalCache(10_000);
    await expect(cache.total('k', () => Promise.reject(new Error('mongo down')))).rejects.toThrow('mongo down');
    expect(await cache.total('k', async () => 3)).toBe(3);
  });

  it('counts again when the caller has seen more than the kept total', async () => {
    const cache = new TotalCache(10_000);
    const c = counter([3, 9]);
    expect(await cache.total('k', c.fn)).toBe(3);
    expect(await cache.total('k', c.fn, 3)).toBe(3);
    expect(await cache.total('k', c.fn, 4)).toBe(9);
    expect(await cache.total('k', c.fn)).toBe(9);
    expect(c.calls()).toBe(2);
  });

  it('keeps a total the caller knows exactly', async () => {
    const cache = new TotalCache(10_000);
    cache.set('k', 41);
    expect(await cache.total('k', async () => -1)).toBe(41);
    const off = new TotalCache(0);
    off.set('k', 41);
    expect(await off.total('k', async () => 7)).toBe(7);
  });

  it('a total kept while a count runs does not fail the requests waiting on that count', async () => {
    const cache = new TotalCache(10_000);
    let finish!: (n: number) => void;
    const waiting = cache.total('k', () => new Promise<number>((resolve) => (finish = resolve)));
    cache.set('k', 12);
    finish(12);
    await expect(waiting).resolves.toBe(12);
    expect(await cache.total('k', async () => -1)).toBe(12);
  });

  it('holds at most `max` keys', async () => {
    const cache = new TotalCache(10_000, { max: 2 });
    const c = counter([1, 2, 3, 4]);
    await cache.total('x', c.fn);
    await cache.total('y', c.fn);
    await cache.total('z', c.fn);
    expect(await cache.total('x', c.fn)).toBe(4);
  });
});
