/**
 * The per-country quota of the simulated service: a token bucket of `perSecond` requests holding
 * `burst` of them (by default a second's worth: one call at Q = 1, since the real service names no
 * burst and a new account's must be assumed to hold one), and a count per UTC day. One call is one
 * transaction whatever it carries. The bucket sees each call on its own clock, up to `jitterMs`
 * late: two calls sent 1/Q apart may reach it closer together, as over a real network.
 */
import type { Country } from '../core/identifiers.js';

export interface QuotaLimits {
  readonly perSecond: number;
  readonly perDay: number;
  /** Calls the bucket holds (default: perSecond). */
  readonly burst?: number;
  /** The most a call reaches the bucket late (ms, uniform from 0). */
  readonly jitterMs?: number;
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

  constructor(
    private readonly limits: QuotaLimits,
    private readonly random: () => number = Math.random,
  ) {}

  take(country: Country, now: number): QuotaVerdict {
    const { perSecond, perDay } = this.limits;
    const depth = this.limits.burst ?? perSecond;
    const jitter = this.limits.jitterMs ?? 0;
    // Arrivals are not in send order when one is late by more than the gap to the next: the bucket
    // never runs backwards, it only sees the later one first.
    const arrived = now + (jitter > 0 ? this.random() * jitter : 0);
    const day = Math.floor(arrived / DAY_MS);
    let b = this.#buckets.get(country);
    if (!b) this.#buckets.set(country, (b = { tokens: depth, at: arrived, day, usedToday: 0 }));
    if (b.day !== day) Object.assign(b, { day, usedToday: 0 });
    b.tokens = Math.min(depth, b.tokens + (Math.max(0, arrived - b.at) / 1000) * perSecond);
    b.at = Math.max(b.at, arrived);
    if (b.usedToday >= perDay) return { ok: false, limit: 'day', retryAfterMs: (day + 1) * DAY_MS - arrived };
    if (b.tokens < 1) return { ok: false, limit: 'second', retryAfterMs: Math.ceil(((1 - b.tokens) / perSecond) * 1000) };
    b.tokens -= 1;
    b.usedToday += 1;
    return { ok: true };
  }
}
