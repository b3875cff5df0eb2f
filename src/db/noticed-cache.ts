import { LRUCache } from 'lru-cache';
import type { Change, ChangeNotices, ChangeTopic } from './change-notices.js';

/** What a change drops from a cache: everything, or the entries carrying one of these tags. */
export type Dropped = 'all' | readonly string[];

export interface NoticedCacheOptions<V> {
  /** The collections whose changes concern the cache; others are not heard. */
  readonly topics: readonly ChangeTopic[];
  /** How long an entry lives at most, however quiet the notices (ms; 0 keeps nothing). */
  readonly ttlMs: number;
  /** Bound on what is kept: entries, and their total size as `sizeOf` measures it. */
  readonly maxEntries: number;
  readonly maxSize?: number;
  readonly sizeOf?: (value: V) => number;
  /** What a kept value depends on, as tags (see `documentTag`). Without it, any change empties the cache. */
  readonly tagsOf?: (value: V) => readonly string[];
  /** What a change to one of `topics` drops. Default: the documents it names, or all when it names none. */
  readonly drops?: (change: Change) => Dropped;
  /** Told of every read: answered from memory (`hit`) or by loading (`load`). */
  readonly count?: (outcome: 'hit' | 'load') => void;
}

/** The tag of one document: an entry carrying it goes when a change names that document. */
export function documentTag(topic: ChangeTopic, id: string): string {
  return `${topic}:${id}`;
}

/** The default of `drops`: the documents a change names, or everything when it names none. */
export function namedDocuments(change: Change): Dropped {
  return change.ids ? change.ids.map((id) => documentTag(change.topic, id)) : 'all';
}

/**
 * Drops remembered so that a load running across them can tell whether it read from before one
 * that concerns it. Past this many during one load, the load's value is not kept.
 */
const DROPS_REMEMBERED = 1_024;

interface Entry<V> {
  readonly value: V;
  readonly tags: readonly string[];
}

/**
 * Answers kept in memory until a change they depend on is noticed (ChangeNotices), or for `ttlMs`
 * at most. Each entry carries tags (`tagsOf`); a change drops the entries carrying the tags it names
 * (`drops`), and a notice that names nothing (`all`: notices may have been missed, or one could not
 * be read) empties the cache. While notices may be missed (the subscription is down) it keeps nothing
 * and every read loads. A load that was running when a change that concerns its value was noticed is
 * returned but not kept: it may have read the data from before the change. Concurrent reads of one
 * key share one load, unless a drop came between them.
 */
export class NoticedCache<V extends NonNullable<unknown>> {
  readonly #lru: LRUCache<string, Entry<V>> | undefined;
  /** The keys of the kept entries carrying each tag. */
  readonly #byTag = new Map<string, Set<string>>();
  /** Moves on every drop; a load compares it with where it started. */
  #seq = 0;
  /** A load that started before this cannot be checked against the drops since, and is not kept. */
  #uncheckedBefore = 0;
  #recent: { readonly seq: number; readonly tags: ReadonlySet<string> }[] = [];
  /** Loads under way, by key: a read of the same key joins one that no drop has overtaken. */
  readonly #loading = new Map<string, { readonly from: number; readonly value: Promise<V | undefined> }>();
  readonly #stop: () => void;
  #closed = false;

  constructor(
    private readonly notices: Pick<ChangeNotices, 'live' | 'onChange' | 'listen'>,
    private readonly opts: NoticedCacheOptions<V>,
  ) {
    this.#lru =
      opts.ttlMs > 0
        ? new LRUCache<string, Entry<V>>({
            max: opts.maxEntries,
            ttl: opts.ttlMs,
            dispose: (entry, key) => this.#untag(key, entry.tags),
            ...(opts.maxSize && opts.sizeOf
              ? { maxSize: opts.maxSize, sizeCalculation: (e: Entry<V>) => Math.max(1, opts.sizeOf!(e.value)) }
              : {}),
          })
        : undefined;
    const drops = opts.tagsOf ? (opts.drops ?? namedDocuments) : () => 'all' as const;
    this.#stop = notices.onChange((notice) => {
      if (notice === 'all') this.clear();
      else if (opts.topics.includes(notice.topic)) this.#drop(drops(notice));
    });
  }

  /** The kept value of `key`, or what `load` gives (kept if it is not undefined). */
  async get(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const lru = this.#lru;
    if (!lru || this.#closed) return load();
    if (!this.notices.live) {
      // A process subscribes when it first reads through a cache; until that stands, reads load.
      this.notices.listen();
      this.opts.count?.('load');
      return load();
    }
    const kept = lru.get(key);
    if (kept !== undefined) {
      this.opts.count?.('hit');
      return kept.value;
    }
    const joined = this.#loading.get(key);
    // Joined only while nothing was dropped since it started: a later read must not get what an
    // earlier one read from before a change (a rotated token's account, say).
    if (joined && joined.from === this.#seq) {
      this.opts.count?.('hit');
      return joined.value;
    }
    this.opts.count?.('load');
    const from = this.#seq;
    const loading = load();
    this.#loading.set(key, { from, value: loading });
    let value: V | undefined;
    try {
      value = await loading;
    } finally {
      if (this.#loading.get(key)?.value === loading) this.#loading.delete(key);
    }
    if (value === undefined || !this.notices.live) return value;
    const tags = this.opts.tagsOf?.(value) ?? [];
    if (this.#unchangedSince(from, tags)) {
      lru.set(key, { value, tags });
      for (const tag of tags) {
        let keys = this.#byTag.get(tag);
        if (!keys) this.#byTag.set(tag, (keys = new Set()));
        keys.add(key);
      }
    }
    return value;
  }

  clear(): void {
    this.#uncheckedBefore = ++this.#seq;
    this.#recent = [];
    this.#lru?.clear();
    this.#byTag.clear();
  }

  /** Stops listening to notices; every later read loads. */
  close(): void {
    this.#closed = true;
    this.#stop();
    this.clear();
  }

  #drop(dropped: Dropped): void {
    if (dropped === 'all') return this.clear();
    if (dropped.length === 0) return;
    this.#recent.push({ seq: ++this.#seq, tags: new Set(dropped) });
    if (this.#recent.length > DROPS_REMEMBERED) this.#uncheckedBefore = this.#recent.shift()!.seq;
    for (const tag of dropped) {
      const keys = this.#byTag.get(tag);
      // Deleting disposes the entry, which untags it: iterate over a copy.
      if (keys) for (const key of [...keys]) this.#lru?.delete(key);
    }
  }

  /** Whether no drop since `from` concerns a value with `tags` (a clear concerns every value). */
  #unchangedSince(from: number, tags: readonly string[]): boolean {
    if (from === this.#seq) return true;
    if (from < this.#uncheckedBefore) return false;
    return !this.#recent.some((d) => d.seq > from && tags.some((t) => d.tags.has(t)));
  }

  #untag(key: string, tags: readonly string[]): void {
    for (const tag of tags) {
      const keys = this.#byTag.get(tag);
      keys?.delete(key);
      if (keys?.size === 0) this.#byTag.delete(tag);
    }
  }
}
