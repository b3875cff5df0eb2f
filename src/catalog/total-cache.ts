import { LRUCache } from 'lru-cache';

type Count = () => Promise<number>;

/**
 * The totals of world lists, reused for a few seconds. Laravel's paginator puts a total on every
 * page, and counting what a filter matches among 10^6 products (an index scan on MongoDB) costs
 * far more than reading the page itself; a list that clients page through, poll or search again
 * counts once per `ttlMs`, and concurrent requests for one filter share one count (lru-cache's
 * fetch coalesces them). A total may be up to `ttlMs` old; the page's items never are.
 */
export class TotalCache {
  readonly #cache: LRUCache<string, number, Count> | undefined;

  constructor(ttlMs: number, opts: { readonly max?: number; readonly now?: () => number } = {}) {
    this.#cache =
      ttlMs > 0
        ? new LRUCache<string, number, Count>({
            max: opts.max ?? 1_000,
            ttl: ttlMs,
            fetchMethod: (_key, _stale, { context }) => context(),
            // A `set` while a count runs (a short page ended the list meanwhile) aborts that count's
            // fetch, which would reject every request waiting on it: they wait for their count instead.
            ignoreFetchAbort: true,
            ...(opts.now ? { perf: { now: opts.now }, ttlResolution: 0 } : {}),
          })
        : undefined;
  }

  /**
   * `key` must name the filter exactly (its JSON); `count` runs when no fresh total is kept, or
   * when `atLeast` (what the caller has just seen) shows the kept one to be too low.
   */
  async total(key: string, count: Count, atLeast = 0): Promise<number> {
    if (!this.#cache) return count();
    const kept = (await this.#cache.fetch(key, { context: count })) ?? (await count());
    if (kept >= atLeast) return kept;
    return (await this.#cache.fetch(key, { context: count, forceRefresh: true })) ?? count();
  }

  /** Keeps a total the caller knows exactly (a page that was not full ends the list). */
  set(key: string, total: number): void {
    this.#cache?.set(key, total);
  }
}
