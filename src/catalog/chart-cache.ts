/**
 * The charts an api process has drawn, kept for a few minutes, and the ones being drawn (asked for
 * again meanwhile, they are answered from the one render). Keys name the product, the preset window
 * and size, the title and the product's last point, so presets leave a product DAYS × WIDTHS ×
 * HEIGHTS keys per point.
 *
 * Everyone's charts share the cache, so no account may fill it: each chart is held by the account
 * whose request drew it, and an account that holds its share of the entries gives up its own oldest
 * for a new one instead of pushing out other accounts' charts. With the render budget, one account
 * can push out at most its share of others' charts, once.
 */
import { LRUCache } from 'lru-cache';

export interface Chart {
  readonly body: Buffer;
  readonly etag: string;
}

export interface ChartCacheOptions {
  readonly maxEntries: number;
  readonly maxBytes: number;
  readonly ttlMs: number;
  /** Entries one account's renders may hold at once. */
  readonly perAccount: number;
}

export class ChartCache {
  readonly #charts: LRUCache<string, Chart>;
  /** Each account's keys, oldest first, and each key's account. */
  readonly #held = new Map<string, Set<string>>();
  readonly #holder = new Map<string, string>();
  readonly #drawing = new Map<string, Promise<Chart>>();

  constructor(private readonly opts: ChartCacheOptions) {
    this.#charts = new LRUCache<string, Chart>({
      max: opts.maxEntries,
      maxSize: opts.maxBytes,
      sizeCalculation: (c) => Math.max(1, c.body.length),
      ttl: opts.ttlMs,
      dispose: (_chart, key) => this.#release(key),
    });
  }

  get size(): number {
    return this.#charts.size;
  }

  get(key: string): Chart | undefined {
    return this.#charts.get(key);
  }

  /** The chart being drawn for `key`, once drawn; undefined when none is, or its render failed. */
  async drawing(key: string): Promise<Chart | undefined> {
    return this.#drawing.get(key)?.catch(() => undefined);
  }

  /** Draws the chart of `key` for `account` and keeps it; a render of `key` under way is joined instead. */
  draw(key: string, account: string, render: () => Promise<Chart>): Promise<Chart> {
    const under = this.#drawing.get(key);
    if (under) return under;
    const drawn = render()
      .then((chart) => {
        this.#keep(key, account, chart);
        return chart;
      })
      .finally(() => this.#drawing.delete(key));
    this.#drawing.set(key, drawn);
    return drawn;
  }

  #keep(key: string, account: string, chart: Chart): void {
    let mine = this.#held.get(account);
    if (mine && mine.size >= this.opts.perAccount) {
      const oldest = mine.values().next().value!;
      this.#charts.delete(oldest);
      this.#release(oldest); // done by dispose too, unless the cache had already let it go
    }
    this.#charts.set(key, chart);
    if (!this.#charts.has(key)) return; // larger than the cache
    if (!mine) this.#held.set(account, (mine = new Set()));
    mine.add(key);
    this.#holder.set(key, account);
  }

  #release(key: string): void {
    const account = this.#holder.get(key);
    if (account === undefined) return;
    this.#holder.delete(key);
    const mine = this.#held.get(account);
    mine?.delete(key);
    if (mine?.size === 0) this.#held.delete(account);
  }
}
