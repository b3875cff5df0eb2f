import { LRUCache } from 'lru-cache';
import type { ChangeNotices, ChangeTopic } from './change-notices.js';

export interface NoticedCacheOptions<V> {
  /** The collections whose change empties the cache. */
  readonly topics: readonly ChangeTopic[];
  /** How long an entry lives at most, however quiet the notices (ms; 0 keeps nothing). */
  readonly ttlMs: number;
  /** Bound on what is kept: entries, and their total size as `sizeOf` measures it. */
  readonly maxEntries: number;
  readonly maxSize?: number;
  readonly sizeOf?: (value: V) => number;
}

/**
 * Answers kept in memory until a change to one of their collections is noticed (ChangeNotices), or
 * for `ttlMs` at most. While notices may be missed (the subscription is down) it keeps nothing and
 * every read loads. A load that was running when a change was noticed is returned but not kept:
 * it may have read the data from before the change.
 */
export class NoticedCache<V extends NonNullable<unknown>> {
  readonly #lru: LRUCache<string, V> | undefined;
  /** Moves on every emptying; a load keeps its value only if it did not move meanwhile. */
  #generation = 0;
  readonly #stop: () => void;
  #closed = false;

  constructor(
    private readonly notices: Pick<ChangeNotices, 'live' | 'onChange' | 'listen'>,
    opts: NoticedCacheOptions<V>,
  ) {
    this.#lru =
      opts.ttlMs > 0
        ? new LRUCache<string, V>({
            max: opts.maxEntries,
            ttl: opts.ttlMs,
            ...(opts.maxSize && opts.sizeOf ? { maxSize: opts.maxSize, sizeCalculation: (v: V) => Math.max(1, opts.sizeOf!(v)) } : {}),
          })
        : undefined;
    this.#stop = notices.onChange((notice) => {
      if (notice === 'all' || opts.topics.includes(notice)) this.clear();
    });
  }

  /** The kept value of `key`, or what `load` gives (kept if it is not undefined). */
  async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const lru = this.#lru;
    if (!lru || this.#closed) return load();
    if (!this.notices.live) {
      // A process subscribes when it first reads through a cache; until that stands, reads load.
      this.notices.listen();
      return load();
    }
    const kept = lru.get(key);
    if (kept !== undefined) return kept;
    const generation = this.#generation;
    const value = await load();
    if (value !== undefined && generation === this.#generation && this.notices.live) lru.set(key, value);
    return value;
  }

  clear(): void {
    this.#generation++;
    this.#lru?.clear();
  }

  /** Stops listening to notices; every later read loads. */
  close(): void {
    this.#closed = true;
    this.#stop();
    this.clear();
  }
}
