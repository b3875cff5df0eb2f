/**
 * The margin the quota governor keeps on top of 1/Q, per country, so that the pace settles just
 * outside the network's jitter. The upstream's bucket may hold a single call (at Q = 1 nothing says
 * it holds more), and two calls started 1/Q apart can reach it a few ms closer together: the
 * later one is answered 429 however exactly the starts were kept.
 *
 * The controller is a stochastic quantile tracker (Robbins–Monro): every start granted shrinks the
 * margin by `down`, every call answered 429 soon after its slot grows it by `up` (and undoes its
 * own grant's shrink). Its drift is zero where the share of 429s is p = down / (up + down), so the
 * margin converges to the jitter's (1 − p) quantile whatever the jitter's shape, and p is the one
 * figure an operator cares about (here 0.2 %: well under the 0.5 % a deployment may lose). AIMD,
 * the usual choice, probes for a capacity by overshooting it: its sawtooth crosses the limit once
 * per cycle and its mean sits a fixed fraction below it, set by the decrease factor rather than by
 * the jitter; here the capacity is known (Q) and only the tail of the jitter is not.
 *
 * The shrink is applied by the permit script itself (one HSET within a call that already runs), so
 * a call that goes through costs Redis nothing more; a 429 costs one script call. The Lua side
 * (governor-scripts.ts) does exactly what nextMargin does.
 */

/**
 * From this interval (1/Q, ms) on, the pace counts each start from when the last call actually went
 * as well as from when it was booked (governor-scripts.ts), margin or not. A late timer (a ms or so)
 * then costs under 0.5 % of the pace, and slow paces are where a one-call bucket is to be expected
 * (new accounts run at 1 request/s); there, two calls that went late and on time would reach the
 * upstream less than 1/Q apart. Faster paces count so once the upstream has asked for a margin.
 */
export const STRICT_FROM_INTERVAL_MS = 200;

/** Whether the pace counts starts from when calls went (the scripts' `strict`, which this mirrors). */
export function strictPace(intervalMs: number, marginMs: number): boolean {
  return intervalMs >= STRICT_FROM_INTERVAL_MS || marginMs > 0;
}

/**
 * The margin a country is paced at when it has learnt less: the median of what its peers (the
 * other countries this process paces strictly) have learnt, those with none left out. The jitter
 * is mostly the path's and the hosts', which the countries share, so a country that has not met it
 * yet (new, or all starting at once) starts where its peers settled rather than paying its own
 * first 429s; one that meets more learns more on top, and one whose peers have none runs at its own.
 */
export function peerMarginMs(learnt: ReadonlyMap<string, number>, country: string): number {
  const others = [...learnt].filter(([c, m]) => c !== country && m > 0).map(([, m]) => m);
  if (!others.length) return 0;
  others.sort((a, b) => a - b);
  const mid = others.length >> 1;
  return others.length % 2 ? others[mid]! : (others[mid - 1]! + others[mid]!) / 2;
}

/**
 * The least margin a strictly paced country keeps (ms): the processes' clocks and timers agree to a
 * fraction of a millisecond, not to nothing, so a pace of exactly 1/Q meets a one-call bucket early
 * now and then on that error alone, and each such 429 would cost a whole step of margin for
 * hundreds of calls. A millisecond, or 0.1 % of the interval at faster paces (0.2 ms at Q = 5).
 * Under one injected clock (tests, the simulated day) there is no such error, and no least margin.
 */
export function leastMarginMs(intervalMs: number): number {
  return Math.min(1, 0.001 * intervalMs);
}

/** The share of calls answered 429 the margin settles at. */
export const TARGET_THROTTLED_SHARE = 0.002;

/** The margin never passes one interval: the pace stays at Q/2 or faster, however the upstream answers. */
const CAP_INTERVALS = 1;

/**
 * What a lone 429 adds, in intervals: 10 ms at Q = 1. The margin moves in these steps, so it hovers
 * about half a step above the jitter's quantile: smaller steps pace closer to Q but take longer to
 * learn a jitter at first (against 20 ms of jitter, 1/100 keeps 0.977 of Q, 1/50 would keep 0.973).
 */
const UP_INTERVALS = 0.01;

export interface MarginSteps {
  /**
   * Added per call answered 429 soon after its slot (ms), times its place in an unbroken run of
   * 429s: a lone 429 (the jitter's tail) adds one step; a second in a row means the margin is far
   * too small, or no pace helps, and each further one adds a step more.
   */
  readonly up: number;
  /** Taken off per start granted (ms). */
  readonly down: number;
  /** The margin's most (ms). */
  readonly cap: number;
}

/** The controller's steps for a country whose calls are `intervalMs` (1/Q) apart. */
export function marginSteps(intervalMs: number): MarginSteps {
  const up = UP_INTERVALS * intervalMs;
  return {
    up,
    down: (up * TARGET_THROTTLED_SHARE) / (1 - TARGET_THROTTLED_SHARE),
    cap: CAP_INTERVALS * intervalMs,
  };
}

/**
 * The margin after a start was granted and its call answered: `throttled` when it was a 429 soon
 * after its slot, the `run`-th in a row. The grant's shrink comes first (the permit script takes it
 * off when it grants), and a 429 undoes it along with its own step.
 */
export function nextMargin(margin: number, throttled: boolean, steps: MarginSteps, run = 1): number {
  const granted = Math.max(0, margin - steps.down);
  return throttled ? Math.min(steps.cap, granted + steps.up * run + steps.down) : granted;
}

/**
 * Whether a run of 429s (every call of the country answered 429 for `runMs`, `runCalls` calls) came
 * at a pace well under Q: a fifth under it, whether the margin slowed it (a quarter of an interval)
 * or the holds that Retry-After asked for did. Then the upstream refuses the country; it is not
 * being called too fast.
 */
export function slowedWellUnderQ(marginMs: number, intervalMs: number, runCalls: number, runMs: number): boolean {
  return marginMs >= intervalMs / 4 || (runCalls - 1) * intervalMs <= 0.8 * runMs;
}

/**
 * How soon after its call went out a 429 still speaks of the call's slot: the upstream judges a
 * call when it arrives, so a 429 that took longer than this says more about the network than the pace.
 */
export function soonAfterSlotMs(intervalMs: number): number {
  return Math.max(1_000, 2 * intervalMs);
}
