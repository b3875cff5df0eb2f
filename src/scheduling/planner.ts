import { createHash, randomUUID } from 'node:crypto';
import type { Country } from '../core/identifiers.js';
import type { QuotaGovernor } from '../quota/governor.js';
import type { DayStatus } from '../quota/governor-day.js';
import { claimProducts, countDue, pickAccountShares, pickAhead, pickDue, type DueProduct } from './due.js';
import { MAX_ITEMS_PER_CALL } from '../upstream/port.js';
import type { Connection } from 'mongoose';
import type { Redis } from '../db/redis.js';
import type { Config } from '../../config/env.js';
import type { Metrics } from '../core/metrics.js';
import { countryTag } from '../db/redis-keys.js';
import type { RefreshPolicies } from './policy-store.js';
import type { RefreshPolicy } from './refresh-objective.js';
import { tuneCountry } from './tune-country.js';

/** A batch of refreshes as the planner queues it (the refresh job kinds' payload, jobs/refresh.ts). */
export interface RefreshBatch {
  readonly name: 'refresh.p1' | 'refresh.p0';
  readonly data: { country: Country; asins: string[]; due: number; claim: string; over?: true };
  readonly opts: { jobId: string };
}

/** What the planner reads of the country's refresh queue (a BullMQ queue is one). */
export interface RefreshQueueState {
  isPaused(): Promise<boolean>;
  getJobCounts(...states: (typeof BOOKED)[number][]): Promise<Record<string, number>>;
}

/**
 * Where the planner's batches go, and the country's refresh queue it reads first (paused? how
 * much is booked?). The job producer (jobs/queues.ts) is one.
 */
export interface RefreshQueues {
  queue(country: Country, cls: 'refresh'): RefreshQueueState;
  addBulk(batches: readonly RefreshBatch[]): Promise<void>;
}

/** What planning uses of the application's context. */
export interface PlannerContext {
  readonly config: Config;
  readonly mongo: Connection;
  /** Fail-fast commands: the planner's credit. */
  readonly redis: Redis;
  readonly redisPrefix: string;
  readonly quota: QuotaGovernor;
  readonly metrics: Metrics;
  readonly jobs: RefreshQueues;
  /** The countries' tuned refresh policies (adaptive scheduling). */
  readonly policies: RefreshPolicies;
}

export interface CountryPlan {
  readonly country: Country;
  /** Calls this pass could plan: the credit accrued, within the horizon's room in the queue. */
  readonly budget: number;
  /** Credit left for the next pass (a fraction of a call, or what the due products did not use). */
  readonly credit: number;
  readonly queued: number;
  readonly enqueued: { readonly batches: number; readonly p1: number; readonly p0: number };
  /** Products due, counted only when the pass had a budget. */
  readonly due: { readonly p1: number; readonly p0: number } | null;
  readonly paused: boolean;
  /** When a part-filled batch was held back for more products: plan again at this time (epoch ms). */
  readonly recheckAt: number | null;
}

/**
 * The refreshes a pass counts as booked and not yet run: those waiting and running in the
 * country's refresh queue. Imports, crawls and forced updates have queues of their own and never
 * count; delayed refreshes (a retry's backoff, a wait for the upstream) are left out too, so that
 * none of them can hold the plan up.
 */
const BOOKED = ['wait', 'prioritized', 'active'] as const;

function batchId(country: Country, asins: readonly string[], leaseUntil: number): string {
  const h = createHash('sha1').update(asins.join(',')).digest('hex').slice(0, 16);
  return `refresh-${country}-${h}-${leaseUntil}`;
}

/**
 * Calls a second scheduled work may spend from now on: what the day still allows it (the quota
 * day less the reserve for forced updates, less what every kind of work spent) spread evenly over
 * the rest of the day, and never more than the pace Q.
 */
export async function sustainableRate(quota: QuotaGovernor, perSecond: number, country: Country, now: Date): Promise<number> {
  return rateOfDay(await quota.day(country, now.getTime()), perSecond, now);
}

function rateOfDay(day: DayStatus, perSecond: number, now: Date): number {
  if (day.spent) return 0;
  const leftS = Math.max(1, (day.day.end - now.getTime()) / 1_000);
  return Math.min(perSecond, Math.max(0, day.scheduledLimit - day.used) / leftS);
}

/** The day's calls of scheduled refreshes: every call less those of the classes that count their own. */
export function refreshCallsOf(day: DayStatus): number {
  return day.used - day.classes.forced.used - day.classes.import.used - day.classes.crawl.used;
}

const creditKey = (ctx: PlannerContext, country: Country): string => `${countryTag(ctx.redisPrefix, country)}:plan:credit`;

/** A product a pass plans; `over` when it is past its accounts' fair shares (a pass short of quota, or of a backlogged queue's room). */
type Chosen = DueProduct & { over: boolean };

/**
 * The accounts' shares, then the global order, once each and `slots` at most. With shares (a pass
 * short of quota), what the global order adds is over the shares. Priority 1 ahead of priority 0,
 * and within each the shares ahead of the rest (stable), so batches fill in that order.
 */
function mergePicks(shares: readonly DueProduct[], global: readonly DueProduct[], slots: number, short: boolean): Chosen[] {
  const seen = new Set<string>();
  const merged: Chosen[] = [];
  for (const [list, over] of [
    [shares, false],
    [global, short],
  ] as const) {
    for (const p of list) {
      const id = String(p._id);
      if (seen.has(id) || merged.length >= slots) continue;
      seen.add(id);
      merged.push({ ...p, over });
    }
  }
  return merged.sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0) || Number(a.over) - Number(b.over));
}

/**
 * The credit of a pass: what the sustainable rate accrued since the last pass, the fraction carried,
 * up to what the horizon allows (a scheduler that was away does not come back with a burst) but
 * never less than two calls, so that a low rate's fraction is not lost between ticks. The first
 * pass of all starts with one horizon's worth. No rate, no credit: the day is spent. With it, the
 * day's refresh calls counted at the last pass (`ran`), null on the first pass of a day.
 */
async function accrue(
  ctx: PlannerContext,
  country: Country,
  rate: number,
  now: number,
): Promise<{ credit: number; cap: number; ran: number | null; elapsedS: number }> {
  const [credit, at, ran] = await ctx.redis.hmget(creditKey(ctx, country), 'credit', 'at', 'ran');
  const cap = rate > 0 ? Math.max(2, rate * ctx.config.workers.scheduler.horizonS) : 0;
  const lastRan = ran === null ? null : Number(ran);
  if (credit === null || at === null) return { credit: rate * ctx.config.workers.scheduler.horizonS, cap, ran: lastRan, elapsedS: 0 };
  const elapsedS = Math.max(0, (now - Number(at)) / 1_000);
  return { credit: Math.min(cap, Number(credit) + rate * elapsedS), cap, ran: lastRan, elapsedS };
}

async function keepCredit(ctx: PlannerContext, country: Country, credit: number, now: number, ran: number): Promise<void> {
  await ctx.redis
    .multi()
    .hset(creditKey(ctx, country), 'credit', String(credit), 'at', String(now), 'ran', String(ran))
    .pexpire(creditKey(ctx, country), 86_400_000)
    .exec();
}

/**
 * Calls the refresh class is expected to run before the next pass, when its queue is backlogged:
 * as many as it ran since the last pass. The other classes' work (imports, crawls, forced updates)
 * takes its share of the pace first, so the refresh class may drain slower than Q, and a queue
 * planned at Q would then make every account's refreshes wait behind one account's excess. Past
 * these calls, a pass's products are beyond their accounts' fair shares (`over`) and run behind the
 * shares of every account (in the queue, and in the permits' order once workers hold them). The
 * queue is backlogged when it holds more batches than the class ran since the last pass (workers
 * hold most of them as active jobs waiting for permits). Infinity when it is not, or the count is
 * unknown (the first pass of a day).
 */
function fairCallsOf(queued: number, ranNow: number, ranBefore: number | null): number {
  if (ranBefore === null || ranNow < ranBefore) return Infinity;
  const ran = Math.max(1, ranNow - ranBefore);
  return queued > ran ? ran : Infinity;
}

/**
 * Seconds of the refresh class's calls an account may keep its part of between passes of a
 * backlogged queue. Passes come every few seconds (a tick, or a part-filled batch's recheck), and
 * one pass's part is then less than one batch; an account's products come due together (its batch
 * was refreshed in one call), so it keeps what it left until they do.
 */
const KEEP_WINDOW_S = 30;

/**
 * Calls a planning step takes at most: its commands (the due counts, the picks, the claim) then
 * touch at most this many batches of products, 1,000 documents, however large the pass's budget.
 */
export const STEP_CALLS = 100;

/**
 * One planning pass for one country. The budget is the credit accrued since the last pass at the
 * sustainable rate (so the day's quota is spread over the day), within what the queue may hold for
 * the horizon. It is planned in steps of at most STEP_CALLS calls (planStep), each a bounded set of
 * MongoDB commands, until the budget is spent or a step finds less due than it could take. The
 * backlog beyond the budget stays in MongoDB; a job lost with Redis leaves its products due again
 * when the lease ends.
 */
export async function planCountry(ctx: PlannerContext, country: Country, now = new Date()): Promise<CountryPlan> {
  const queue = ctx.jobs.queue(country, 'refresh');
  const t = now.getTime();
  const empty = { batches: 0, p1: 0, p0: 0 };
  const idle = { country, budget: 0, credit: 0, queued: 0, enqueued: empty, due: null, paused: false, recheckAt: null };

  if (await queue.isPaused()) return { ...idle, paused: true };
  const day = await ctx.quota.day(country, t);
  const rate = rateOfDay(day, ctx.config.quota.quotas[country].perSecond, now);
  const ran = refreshCallsOf(day);
  const counts = await queue.getJobCounts(...BOOKED);
  const queued = BOOKED.reduce((n, s) => n + (counts[s] ?? 0), 0);
  const accrued = await accrue(ctx, country, rate, t);
  const { credit, cap } = accrued;
  const budget = Math.max(0, Math.min(Math.floor(credit), Math.ceil(cap) - queued));
  if (budget === 0) {
    await keepCredit(ctx, country, credit, t, ran);
    return { ...idle, budget, credit, queued };
  }

  // The pass plans with the policy as last tuned (kept by the process a minute); tuning again, which
  // reads every estimate of the country, comes after the batches are queued, off their path.
  const policy = ctx.config.refresh.scheduling === 'adaptive' ? await ctx.policies.read(country, t).catch(() => null) : null;
  const enqueued = { batches: 0, p1: 0, p0: 0 };
  let due: Step['due'] | null = null;
  let recheckAt: number | null = null;
  let fairLeft = fairCallsOf(queued, ran, accrued.ran);
  // What the class runs in KEEP_WINDOW_S at the pace it ran since the last pass, in slots.
  const keepSlots =
    Number.isFinite(fairLeft) && accrued.elapsedS > 0 ? (fairLeft / accrued.elapsedS) * KEEP_WINDOW_S * MAX_ITEMS_PER_CALL : undefined;
  for (let left = budget; left > 0;) {
    const calls = Math.min(left, STEP_CALLS);
    const step = await planStep(ctx, country, calls, Math.min(calls, fairLeft), keepSlots, now, policy);
    if (due === null) {
      due = step.due;
      ctx.metrics.productsDue.set({ country, priority: '1' }, due.p1);
      ctx.metrics.productsDue.set({ country, priority: '0' }, due.p0);
      ctx.metrics.budgetShortfall.set({ country }, (due.p1 + due.p0) / (calls * MAX_ITEMS_PER_CALL));
    }
    enqueued.batches += step.batches;
    enqueued.p1 += step.p1;
    enqueued.p0 += step.p0;
    recheckAt = step.recheckAt;
    left -= step.batches;
    fairLeft = Math.max(0, fairLeft - step.batches);
    // A step that did not fill its calls took all there was due (or held a part-filled batch back).
    if (step.batches < calls) break;
  }
  const left = credit - enqueued.batches;
  await keepCredit(ctx, country, left, t, ran);
  if (policy) await ctx.policies.countPlanned(country, enqueued.p0).catch(() => undefined);
  // Every TUNE_EVERY_MS at most; one that fails leaves the policy as it was.
  await tuneCountry(ctx, country, rate, t).catch(() => undefined);
  ctx.metrics.planned.inc({ country, priority: '1' }, enqueued.p1);
  ctx.metrics.planned.inc({ country, priority: '0' }, enqueued.p0);
  return { country, budget, credit: left, queued, enqueued, due, paused: false, recheckAt };
}

interface Step {
  readonly batches: number;
  readonly p1: number;
  readonly p0: number;
  /** Products due when the step began, counted up to one more than it could take. */
  readonly due: { readonly p1: number; readonly p0: number };
  readonly recheckAt: number | null;
}

/**
 * One step of a pass: up to `calls` batches of due products, priority 1 first, then in the
 * scheduling mode's order (pickDue: the most overdue, or the most likely to have moved), every
 * account's share first when more is due than the step can take; claims them with a lease and
 * enqueues them in one round trip. A call is the scarce unit: a part-filled last batch waits in
 * MongoDB until its products have been due for SCHEDULER_COALESCE, so a burst of new watches fills
 * batches instead of spending a call each.
 */
async function planStep(
  ctx: PlannerContext,
  country: Country,
  calls: number,
  fairCalls: number,
  keepSlots: number | undefined,
  now: Date,
  policy: RefreshPolicy | null,
): Promise<Step> {
  const t = now.getTime();
  const slots = calls * MAX_ITEMS_PER_CALL;
  const fairSlots = fairCalls * MAX_ITEMS_PER_CALL;
  // Counted only as far as the step needs: whether more is due than it can take.
  const due = await countDue(ctx.mongo, country, now, slots + 1);
  const nothing = { batches: 0, p1: 0, p0: 0, due, recheckAt: null };
  // Under a tuned policy (adaptive scheduling only) the calls are the policy's to spend: what the
  // due products leave goes to those due soonest (pickAhead).
  const early = policy !== null;
  if (due.p1 + due.p0 === 0 && !early) return nothing;

  // Only what this step can use, read from the plan indexes (pickDue). Short of quota, or of what
  // the backlogged queue will run before the next pass, every account's fair share of that comes
  // first (pickAccountShares) and the rest is over the shares.
  const short = due.p1 + due.p0 > fairSlots;
  const shares = short && fairSlots > 0 ? await pickAccountShares(ctx, country, fairSlots, now, keepSlots) : [];
  const picked = mergePicks(shares, await pickDue(ctx.mongo, ctx.config, country, slots, now, policy), slots, short);
  let dueBy = now;
  const ahead = early && picked.length < slots ? await pickAhead(ctx.mongo, ctx.config, country, slots - picked.length, now) : [];
  for (const p of ahead) {
    picked.push({ ...p, over: false });
    if (p.next_refresh_at && p.next_refresh_at > dueBy) dueBy = p.next_refresh_at;
  }
  let recheckAt: number | null = null;
  const partial = picked.length % MAX_ITEMS_PER_CALL;
  // With products taken ahead, none is left that waiting could add to a part-filled batch.
  if (partial > 0 && ahead.length === 0) {
    const last = picked.slice(picked.length - partial);
    const oldest = Math.min(...last.map((p) => p.next_refresh_at?.getTime() ?? t));
    if (t - oldest < ctx.config.workers.scheduler.coalesceMs) {
      picked.length -= partial;
      recheckAt = oldest + ctx.config.workers.scheduler.coalesceMs;
    }
  }
  if (picked.length === 0) return { ...nothing, recheckAt };

  const leaseUntil = t + ctx.config.workers.scheduler.leaseMs;
  const token = randomUUID();
  const mine = await claimProducts(ctx.mongo, country, picked, now, leaseUntil, token, dueBy);

  let p1 = 0;
  let p0 = 0;
  const batches: RefreshBatch[] = [];
  // Batches are filled in plan order; one batch may hold the last priority-1 and the first priority-0
  // products (it runs as priority 1), or the last in-share and the first over-share ones (it runs in
  // share): a full batch costs the same call as a short one. Over-share batches run behind the
  // in-share ones of their priority, so the queue an account's excess fills does not delay the
  // others' shares (the light accounts beside a heavy one keep their intervals).
  for (let i = 0; i < mine.length; i += MAX_ITEMS_PER_CALL) {
    const slice = mine.slice(i, i + MAX_ITEMS_PER_CALL);
    const asins = slice.map((p) => p.asin);
    const top = slice.some((p) => p.priority === 1);
    const over = slice.every((p) => p.over);
    for (const p of slice)
      if (p.priority === 1) p1++;
      else p0++;
    const dueAt = Math.min(...slice.map((p) => p.next_refresh_at?.getTime() ?? t));
    batches.push({
      name: top ? 'refresh.p1' : 'refresh.p0',
      data: { country, asins, due: dueAt, claim: token, ...(over ? { over: true as const } : {}) },
      opts: { jobId: batchId(country, asins, leaseUntil) },
    });
  }
  await ctx.jobs.addBulk(batches);
  return { batches: batches.length, p1, p0, due, recheckAt };
}
