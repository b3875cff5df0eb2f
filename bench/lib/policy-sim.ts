/**
 * bench:adaptive's simulation of the scheduler, in memory: the planner's choice and the write path's
 * learning, step by step on a simulated clock, with the product's own functions for every decision
 * — the change-rate estimator and the next refresh (src/scheduling/change-rate.ts), the ranking
 * of due products (due.ts's chooseP0, fed the three windows the MongoDB indexes would return),
 * and the policy's tuning (tune-country.ts's tuneInputOf and tune-policy.ts) every TUNE_EVERY_MS.
 * What it leaves out is storage and transport: MongoDB, Redis, the queue and HTTP, whose speed
 * other benchmarks measure. The "upstream" is the truth of the synthetic catalogue (truth.ts), so a
 * refresh sees exactly what the simulator would answer.
 */
import type { Config } from '../../config/env.js';
import {
  estimateRate,
  nextRefreshAt,
  posteriorRate,
  priorHours,
  withObservation,
  type Observation,
} from '../../src/scheduling/change-rate.js';
import { FIT_MIN_LOOKS, fitGroupModel, groupPrior, type RateCell } from '../../src/scheduling/rate-groups.js';
import type { RateLevels } from '../../src/core/rate-levels.js';
import { chooseP0, LATE_SHARE, windowSize, type DueProduct } from '../../src/scheduling/due.js';
import type { RefreshPolicy } from '../../src/scheduling/refresh-objective.js';
import { TUNE_EVERY_MS, tuneInputOf } from '../../src/scheduling/tune-country.js';
import {
  bucketOf,
  FIRST_BOOST,
  nextBoost,
  rateOfBucket,
  tunePolicy,
  type RateCount,
  type TunedPolicy,
} from '../../src/scheduling/tune-policy.js';
import { MAX_ITEMS_PER_CALL } from '../../src/upstream/port.js';
import { HOUR_MS, type ProductTruth, type RefreshLog } from './truth.js';

export interface SimRun extends RefreshLog {
  readonly calls: number;
  /** Product slots the steps left unused (fewer due than their calls hold), in all and in each step. */
  readonly unusedSlots: number;
  readonly unusedByStep: number[];
  /** The rates the schedule went by at the end (the posterior where there was one, else the estimate). */
  readonly scheduled: Map<string, number | null>;
  /** The same at each of SimOptions.snapshotsAt reached, by instant. */
  readonly snapshots: Map<number, Map<string, number | null>>;
  /** The last tuning (null under fixed scheduling). */
  readonly policy: TunedPolicy | null;
  readonly wallS: number;
}

export interface SimOptions {
  readonly config: Pick<Config, 'refresh'>;
  readonly start: number;
  readonly end: number;
  readonly stepMs: number;
  /** Calls a second (Q). */
  readonly rate: number;
  /** Whether the tuning learns what the products' features say of their rates (rate-groups.ts). */
  readonly groups: boolean;
  /**
   * Whether each product's estimate is its true mean rate instead of what its looks say: the
   * planner and the tuning as they are, the estimator perfect, so a run shows how much of the
   * bound the rest of the scheduler reaches.
   */
  readonly knownRates?: boolean;
  /** Instants at which to keep the rates the schedule goes by (SimRun.snapshots). */
  readonly snapshotsAt?: readonly number[];
}

/** The value (valueKey) the truth holds at `t`. */
function valueAt(tr: ProductTruth, t: number): string {
  let lo = 0;
  let hi = tr.at.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (tr.at[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? tr.v0 : tr.values[lo - 1]!;
}

/** The rate a product that never changes is given (its interval is NEVER_MS). */
const MIN_RATE = 1e-9;

interface State {
  readonly asin: string;
  readonly priority: 0 | 1;
  readonly levels: RateLevels;
  next: number;
  last: number | null;
  /** change_rate (the estimate) and sched_rate (what the schedule goes by). */
  rate: number | null;
  sched: number | null;
  obs: Observation[];
  value: string | null;
}

const asDue = (s: State): DueProduct => ({
  _id: null as unknown as DueProduct['_id'],
  asin: s.asin,
  priority: s.priority,
  next_refresh_at: new Date(s.next),
  last_attempt_at: s.last === null ? null : new Date(s.last),
  change_rate: s.rate,
  sched_rate: s.sched,
});

/** Priority 0's estimates by their levels, as tune-country.ts groups them. */
function cellsOf(states: readonly State[]): RateCell[] {
  const cells = new Map<string, { levels: RateLevels; n: number; sum: number; sumSq: number }>();
  for (const s of states) {
    if (s.priority !== 0 || s.rate === null || !(s.rate > 0) || s.obs.length < FIT_MIN_LOOKS) continue;
    const key = JSON.stringify(s.levels);
    const c = cells.get(key) ?? { levels: s.levels, n: 0, sum: 0, sumSq: 0 };
    const l = Math.log(s.rate);
    c.n += 1;
    c.sum += l;
    c.sumSq += l * l;
    cells.set(key, c);
  }
  return [...cells.values()];
}

/** Runs the scheduler over the products (every one due at the start) and logs what each refresh saw. */
export function simulatePolicy(truths: readonly ProductTruth[], o: SimOptions): SimRun {
  const wall = performance.now();
  const { config } = o;
  const adaptive = config.refresh.scheduling === 'adaptive';
  const states: State[] = truths.map((t) => ({
    asin: t.asin,
    priority: t.priority,
    levels: t.levels,
    next: o.start,
    last: null,
    rate: null,
    sched: null,
    obs: [],
    value: null,
  }));
  const index = new Map(states.map((s, k) => [s.asin, k]));
  const refreshAt: number[][] = truths.map(() => []);
  const refreshValue: string[][] = truths.map(() => []);
  const callsByStep: number[] = [];
  const slots = Math.round(o.rate * (o.stepMs / 1_000)) * MAX_ITEMS_PER_CALL;
  let policy: TunedPolicy | null = null;
  let tunedAt = -Infinity;
  let boost = FIRST_BOOST;
  let plannedP0 = 0;
  let calls = 0;
  let unusedSlots = 0;
  const unusedByStep: number[] = [];
  const snapshots = new Map<number, Map<string, number | null>>();
  const pending = [...(o.snapshotsAt ?? [])].sort((a, b) => a - b);
  for (let t = o.start; t < o.end; t += o.stepMs) {
    while (pending.length && pending[0]! <= t) snapshots.set(pending.shift()!, new Map(states.map((s) => [s.asin, s.sched])));
    const now = new Date(t);
    const dueP1: State[] = [];
    const dueP0: State[] = [];
    // Priority 0's products not due yet, for the calls the due ones leave (pickAhead).
    const laterP0: State[] = [];
    for (const s of states) {
      if (s.next <= t) (s.priority === 1 ? dueP1 : dueP0).push(s);
      else if (s.priority === 0) laterP0.push(s);
    }
    const byDue = (a: State, b: State) => a.next - b.next;
    let picked: State[];
    if (!adaptive) {
      picked = [...dueP1.sort(byDue), ...dueP0.sort(byDue)].slice(0, slots);
    } else {
      const p1 = dueP1.sort(byDue).slice(0, slots);
      const room = slots - p1.length;
      picked = p1;
      if (room > 0 && dueP0.length > 0) {
        const w = windowSize(room);
        // The plan_rate index's order (change_rate descending, null last, then next_refresh_at) and plan_due's.
        const fastest = [...dueP0].sort((a, b) => (b.rate ?? -Infinity) - (a.rate ?? -Infinity) || a.next - b.next).slice(0, w);
        // plan_stale: seen LATE_SHARE of the interval ago or longer, last_attempt_at ascending.
        const staleBefore = t - LATE_SHARE * config.refresh.intervalMs[0];
        const stale = dueP0
          .filter((a) => a.last !== null && a.last <= staleBefore)
          .sort((a, b) => a.last! - b.last!)
          .slice(0, w);
        const oldest = dueP0.sort(byDue).slice(0, w);
        const chosen = chooseP0(
          { fastest: fastest.map(asDue), oldest: oldest.map(asDue), stale: stale.map(asDue) },
          room,
          policy as RefreshPolicy | null,
          config.refresh.intervalMs[0],
          now,
        );
        picked = [...p1, ...chosen.map((d) => states[index.get(d.asin)!]!)];
      }
      // As the planner's pickAhead: calls the due products leave go to those due soonest, seen at
      // least REFRESH_MIN_INTERVAL ago, from a window of the plan_due index past now.
      const spare = slots - picked.length;
      if (policy !== null && spare > 0) {
        const seenBy = t - config.refresh.minIntervalMs;
        const ahead = laterP0
          .sort(byDue)
          .slice(0, windowSize(spare))
          .filter((s) => s.last !== null && s.last <= seenBy)
          .slice(0, spare);
        picked = [...picked, ...ahead];
      }
    }
    unusedSlots += slots - picked.length;
    if (policy !== null) plannedP0 += picked.filter((x) => x.priority === 0).length;
    unusedByStep.push(slots - picked.length);
    const stepCalls = Math.ceil(picked.length / MAX_ITEMS_PER_CALL);
    callsByStep.push(stepCalls);
    calls += stepCalls;
    for (const s of picked) {
      const k = index.get(s.asin)!;
      const value = valueAt(truths[k]!, t);
      refreshAt[k]!.push(t);
      refreshValue[k]!.push(value);
      // As the write path learns (src/catalog/writes.ts, learnRate): an observation per refresh after the first.
      if (s.last !== null)
        s.obs = withObservation(s.obs, { hours: (t - s.last) / HOUR_MS, changed: s.value !== null && s.value !== value });
      s.rate = estimateRate(s.obs, priorHours(config, s.priority));
      const posterior =
        adaptive && s.priority === 0 && policy?.prior ? posteriorRate(s.obs, groupPrior(policy.groups, s.levels, policy.prior)) : null;
      s.sched = posterior ?? s.rate;
      if (o.knownRates) s.rate = s.sched = Math.max(MIN_RATE, HOUR_MS / truths[k]!.intervalMs);
      s.value = value;
      s.last = t;
      s.next = nextRefreshAt({
        why: 'refreshed',
        config,
        priority: s.priority,
        lastAttemptAt: now,
        changeRate: s.sched,
        policy: adaptive ? policy : null,
        now,
      })!.getTime();
    }
    // As the planner: tuning comes after the pass's batches, every TUNE_EVERY_MS at most.
    if (adaptive && t - tunedAt >= TUNE_EVERY_MS) {
      const buckets = { p0: new Map<number, number>(), p1: new Map<number, number>() };
      for (const s of states) {
        if (s.rate === null || !(s.rate > 0)) continue;
        const m = s.priority === 1 ? buckets.p1 : buckets.p0;
        const b = bucketOf(s.rate);
        m.set(b, (m.get(b) ?? 0) + 1);
      }
      const list = (m: Map<number, number>): RateCount[] => [...m].map(([b, count]) => ({ rate: rateOfBucket(b), count }));
      const input = tuneInputOf(config, { p0: list(buckets.p0), p1: list(buckets.p1) }, o.rate);
      // As tune-country.ts: the boost from what the last period planned of priority 0.
      boost = policy === null ? FIRST_BOOST : nextBoost(boost, (plannedP0 * HOUR_MS) / Math.max(1, t - tunedAt), input.budgetPerHour);
      const tuned = tunePolicy({ ...input, boost });
      if (tuned) {
        policy = o.groups ? { ...tuned, groups: fitGroupModel(cellsOf(states)) } : tuned;
        plannedP0 = 0;
        tunedAt = t;
      }
    }
  }
  return {
    refreshAt,
    refreshValue,
    callsByStep,
    estimates: new Map(states.map((s) => [s.asin, s.rate])),
    scheduled: new Map(states.map((s) => [s.asin, s.sched])),
    snapshots,
    calls,
    unusedSlots,
    unusedByStep,
    policy,
    wallS: (performance.now() - wall) / 1_000,
  };
}
