import type { Request, Response } from 'express';
import { LRUCache } from 'lru-cache';

/** A JSON answer made once and sent as it is: its bytes and their entity tag. */
export interface KeptAnswer {
  readonly body: Buffer;
  readonly etag: string | undefined;
}

/**
 * `value` as the bytes `res.json` would send (the app's `json spaces`; no replacer is set), with the
 * entity tag the app's ETag setting makes for them, so that a kept answer is sent without
 * serialising or hashing it again.
 */
export function keepJson(req: Request, value: unknown): KeptAnswer {
  const spaces = req.app.get('json spaces') as number | string | undefined;
  const body = Buffer.from(JSON.stringify(value, undefined, spaces), 'utf8');
  const etagOf = req.app.get('etag fn') as ((body: Buffer) => string | undefined) | undefined;
  return { body, etag: etagOf?.(body) };
}

/** Sends a kept answer as `res.json` sends a fresh one; a matching If-None-Match gets a 304. */
export function sendKept(res: Response, answer: KeptAnswer): void {
  res.set('Content-Type', 'application/json; charset=utf-8');
  if (answer.etag) res.set('ETag', answer.etag);
  res.send(answer.body);
}

/**
 * Answers kept for a fixed short time, for lists that change all the time and are asked for more
 * often still (the world lists, updated by every refresh): each distinct request is made at most
 * once per `ttlMs` per process, and concurrent requests for one that is being made share it
 * (lru-cache's fetch). What is sent is at most `ttlMs` old. `ttlMs` 0 makes every answer afresh.
 *
 * An expired answer is never sent again, so it is dropped at most `ttlMs` after it expires: without
 * that, a stream of distinct requests (filters, searches, deep pages) would keep the cache at its
 * byte cap for good, answers no one can be sent held in the api's memory.
 */
export class RecentAnswers {
  readonly #lru: LRUCache<string, KeptAnswer, () => Promise<KeptAnswer>> | undefined;
  readonly #ttlMs: number;
  readonly #clock: { now(): number };
  #purgedAt = 0;

  constructor(
    ttlMs: number,
    opts: {
      readonly maxEntries?: number;
      readonly maxBytes?: number;
      /** Tests: the time the TTL is counted in (ms, as performance.now()). */
      readonly clock?: { now(): number };
    } = {},
  ) {
    this.#ttlMs = ttlMs;
    this.#clock = opts.clock ?? performance;
    this.#lru =
      ttlMs > 0
        ? new LRUCache<string, KeptAnswer, () => Promise<KeptAnswer>>({
            max: opts.maxEntries ?? 1_000,
            maxSize: opts.maxBytes ?? 32 * 1024 * 1024,
            sizeCalculation: (a) => Math.max(1, a.body.length),
            ttl: ttlMs,
            fetchMethod: (_key, _stale, { context }) => context(),
            // An answer dropped (expired, or pushed out by others) while it is made still goes to
            // those waiting for it: a drop must never fail a request.
            ignoreFetchAbort: true,
            perf: this.#clock,
            // A clock moved by a test is read at every look, not once a millisecond.
            ...(opts.clock ? { ttlResolution: 0 } : {}),
          })
        : undefined;
  }

  async get(key: string, make: () => Promise<KeptAnswer>): Promise<KeptAnswer> {
    if (!this.#lru) return make();
    // One walk of at most `maxEntries` a TTL, on a request: no timer to own, nothing when idle.
    const now = this.#clock.now();
    if (now - this.#purgedAt >= this.#ttlMs) {
      this.#purgedAt = now;
      this.#lru.purgeStale();
    }
    return (await this.#lru.fetch(key, { context: make })) ?? make();
  }

  /** Answers kept now (expired ones included until they are dropped). */
  get size(): number {
    return this.#lru?.size ?? 0;
  }
}
