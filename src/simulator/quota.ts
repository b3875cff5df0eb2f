/**
 * The per-country quota of the simulated service: a token bucket of `perSecond` requests (burst up
 * to one second's worth, since the real service allows "some burst" without a figure) and a count
 * per UTC day. One call is one transaction whatever it carries.
 */
import type { Country } from '../core/identifiers.js';

export interface QuotaLimits {
  readonly perSecond: number;
  readonly perDay: number;
}

export type QuotaVerdict = { readonly ok: true } | { readonly ok: false; readonly limit: 'second' | 'day'; readonly retryAfterMs: number };

interface Bucket {
  tokens: number;
  at: number;
  day: number;
  usedToday: number;
}

const DAY_MS = 86_400_000;

export class QuotaKeeper {
  readonly #buckets = new Map<Country, Bucket>();

  constructor(private readonly limits: QuotaLimits) {}

  take(country: Country, now: number): QuotaVerdict {
    const { perSecond, perDay } = this.limits;
    const day = Math.floor(now / DAY_MS);
    let b = this.#buckets.get(country);
    if (!b) this.#buckets.set(country, (b = { tokens: perSecond, at: now, day, usedToday: 0 }));
    if (b.day !== day) Object.assign(b, { day, usedToday: 0 });
    b.tokens = Math.min(perSecond, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
    if (b.usedToday >= perDay) return { ok: false, limit: 'day', retryAfterMs: (day + 1) * DAY_MS - now };
    if (b.tokens < 1) return { ok: false, limit: 'second', retryAfterMs: Math.ceil(((1 - b.tokens) / perSecond) * 1000) };
    b.tokens -= 1;
    b.usedToday += 1;
    return { ok: true };
  }
}
