import type { Redis } from '../db/redis.js';
import { evalScript } from '../db/redis.js';
import type { Country } from '../core/identifiers.js';
import { PACE_THROTTLED } from './governor-scripts.js';
import { leastMarginMs, marginSteps, peerMarginMs, STRICT_FROM_INTERVAL_MS } from './pace-margin.js';

/** A margin no 429 has touched for this long has long shrunk to nothing. */
const PACE_TTL_MS = 7 * 86_400_000;

export interface PaceMarginsDeps {
  readonly redis: Redis;
  /** The country's pace hash (its margin and its run of 429s). */
  readonly paceKey: (country: Country) => string;
  /** 1/Q of the country (ms). */
  readonly intervalMs: (country: Country) => number;
  /** The scripts' clock argument: '' for Redis's own. */
  readonly now: () => string;
  /** Whether the processes read clocks of their own (not one injected clock), which agree only so far. */
  readonly ownClocks: boolean;
}

/**
 * This process's side of the countries' pace margins (pace-margin.ts): what each strictly paced
 * country has learnt, as the permits' answers told it, which countries' last calls were answered
 * 429, and the feedback of a 429 or of a call that went through. The margins themselves live in
 * Redis, where the permit script shrinks them.
 */
export class PaceMargins {
  /** The margins the strictly paced countries have learnt, as this process last heard them. */
  readonly #learnt = new Map<Country, number>();
  /** Countries whose last calls, as this process last heard, were answered 429. */
  readonly #runs = new Set<Country>();

  constructor(private readonly deps: PaceMarginsDeps) {}

  /** A start was granted: the country's learnt margin, and whether its last calls were answered 429. */
  heard(country: Country, learnt: number, run: boolean): void {
    if (run) this.#runs.add(country);
    if (this.#strict(country)) this.#learnt.set(country, learnt);
  }

  /** A call was answered 429 soon after its slot: the margin grows, from the one it was paced at. */
  async throttled(country: Country): Promise<{ marginMs: number; runMs: number; runCalls: number }> {
    const steps = marginSteps(this.deps.intervalMs(country));
    const raw = (await evalScript(
      this.deps.redis,
      PACE_THROTTLED,
      1,
      this.deps.paceKey(country),
      this.deps.now(),
      String(steps.up),
      String(steps.cap),
      String(PACE_TTL_MS),
      String(steps.down),
      String(this.peerMs(country)),
    )) as string[];
    this.#runs.add(country);
    if (this.#strict(country)) this.#learnt.set(country, Number(raw[0]));
    return { marginMs: Number(raw[0]), runMs: Number(raw[1]), runCalls: Number(raw[2]) };
  }

  /** A call went through: a run of 429s, if there was one, is over. Costs Redis nothing when there was none. */
  wentThrough(country: Country): void {
    if (!this.#runs.delete(country)) return;
    this.deps.redis.hdel(this.deps.paceKey(country), 'since', 'n').catch(() => this.#runs.add(country));
  }

  /** The country's learnt margin (ms), as every process paces by it. */
  async marginMs(country: Country): Promise<number> {
    return Number((await this.deps.redis.hget(this.deps.paceKey(country), 'm')) ?? 0);
  }

  /**
   * The least margin the country is paced at, for a strictly paced country (0 elsewhere): what its
   * peers suggest, and never under leastMarginMs where the processes read clocks of their own. A
   * peer in a run of 429s, or slowed a quarter interval or more, speaks of its own upstream (a
   * refusal), not of the path's jitter.
   */
  peerMs(country: Country): number {
    if (!this.#strict(country)) return 0;
    const jitter = new Map([...this.#learnt].filter(([c, m]) => !this.#runs.has(c) && m < this.deps.intervalMs(c) / 4));
    const least = this.deps.ownClocks ? leastMarginMs(this.deps.intervalMs(country)) : 0;
    return Math.max(peerMarginMs(jitter, country), least);
  }

  /** Whether the country's pace is strict without a margin (a slow pace: pace-margin.ts). */
  #strict(country: Country): boolean {
    return this.deps.intervalMs(country) >= STRICT_FROM_INTERVAL_MS;
  }
}
