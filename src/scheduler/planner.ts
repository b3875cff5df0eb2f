import { createHash, randomUUID } from 'node:crypto';
import mongoose, { type Connection, type Types } from 'mongoose';
import type { Config } from '../../config/env.js';
import type { AppContext } from '../context.js';
import type { WorkersConfig } from '../../config/workers.js';
import type { JobProducer } from '../../jobs/queues.js';
import { eanResolveJobId } from '../../jobs/registry.js';
import type { Country } from '../catalog/identifiers.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics/registry.js';
import { productModel } from '../models/product.js';
import { watchModel } from '../models/watch.js';
import { eanImportModel } from '../models/ean-import.js';
import { recordCountryAnswer } from '../watch/ean-imports.js';
import type { Redis } from 'ioredis';
import type { QuotaGovernor } from '../quota/governor.js';
import { MAX_ITEMS_PER_CALL } from '../upstream/port.js';

export interface PlannerDeps {
  readonly mongo: Connection;
  readonly config: Pick<Config, 'countries' | 'refresh'>;
  readonly workers: WorkersConfig;
  readonly jobs: JobProducer;
  readonly quota: QuotaGovernor;
  /** Where the planner keeps its credit per country, shared by every scheduler. */
  readonly redis: Redis;
  readonly prefix: string;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** The planner's view of the app's context (the scheduler role's, or a test's). */
export function plannerDepsOf(ctx: AppContext, logger: Logger = ctx.logger): PlannerDeps {
  return {
    mongo: ctx.mongo, config: ctx.config, workers: ctx.config.workers, jobs: ctx.jobs, quota: ctx.quota,
    redis: ctx.redis, prefix: ctx.redisPrefix, metrics: ctx.metrics, logger,
  };
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

const STATES = ['wait', 'prioritized', 'active', 'delayed'] as const;

function batchId(country: Country, asins: readonly string[], leaseUntil: number): string {
  const h = createHash('sha1').update(asins.join(',')).digest('hex').slice(0, 16);
  return `refresh-${country}-${h}-${leaseUntil}`;
}

function dueFilterOf(country: Country, now: Date) {
  return { country, next_refresh_at: mongoose.trusted({ $lte: now }) };
}

/** Products of a country due for refresh and not yet planned (the backlog kept in MongoDB), by priority. */
export async function countDue(mongo: Connection, country: Country, now = new Date()): Promise<{ p1: number; p0: number }> {
  const products = productModel(mongo);
  const dueFilter = dueFilterOf(country, now);
  const [p1, p0] = await Promise.all([
    products.countDocuments({ ...dueFilter, priority: 1 }),
    products.countDocuments({ ...dueFilter, priority: 0 }),
  ]);
  return { p1, p0 };
}

/**
 * Calls a second scheduled work may spend from now on: what the day still allows it (the quota
 * day less the reserve for forced updates, less what every kind of work spent) spread evenly over
 * the rest of the day, and never more than the pace Q.
 */
export async function sustainableRate(quota: QuotaGovernor, perSecond: number, country: Country, now: Date): Promise<number> {
  const day = await quota.day(country, now.getTime());
  if (day.spent) return 0;
  const leftS = Math.max(1, (day.day.end - now.getTime()) / 1_000);
  return Math.min(perSecond, Math.max(0, day.scheduledLimit - day.used) / leftS);
}

type Picked = { _id: Types.ObjectId; asin: string; priority: 0 | 1 | null; next_refresh_at: Date | null };

/**
 * Claims picked products with a lease: only products still due move, so of two passes racing for
 * the same products each gets a disjoint share (one document's update is atomic). The lease
 * outlasts a job's whole retry schedule; work lost with Redis comes back when it ends. Returns the
 * ones this claim got, in the order picked.
 */
async function claimProducts<T extends Picked>(mongo: Connection, picked: readonly T[], now: Date, leaseUntil: number, token: string): Promise<T[]> {
  const products = productModel(mongo);
  const ids = picked.map((p) => p._id);
  await products.updateMany(
    { _id: mongoose.trusted({ $in: ids }), next_refresh_at: mongoose.trusted({ $lte: now }) },
    { $set: { next_refresh_at: new Date(leaseUntil), plan_token: token } },
  );
  const claimed = new Set((await products.find({ _id: mongoose.trusted({ $in: ids }), plan_token: token }).select({ _id: 1 }).lean()).map((p) => String(p._id)));
  return picked.filter((p) => claimed.has(String(p._id)));
}

/**
 * Claims up to `n` more due products, most urgent first, under an existing claim: a batch that lost
 * products to a forced update fills its call again (the call is the scarce unit, not the ASIN). A
 * priority-1 batch takes only priority-1 products: a priority-0 one would overtake the priority-1
 * batches still queued.
 */
export async function claimMoreDue(mongo: Connection, country: Country, n: number, leaseMs: number, token: string, onlyPriority1: boolean, now = new Date()): Promise<string[]> {
  if (n <= 0) return [];
  const picked = await productModel(mongo)
    .find({ ...dueFilterOf(country, now), ...(onlyPriority1 ? { priority: 1 } : {}) })
    .sort({ priority: -1, next_refresh_at: 1 })
    .limit(n)
    .select({ asin: 1, priority: 1, next_refresh_at: 1 })
    .lean();
  if (!picked.length) return [];
  return (await claimProducts(mongo, picked, now, now.getTime() + leaseMs, token)).map((p) => p.asin);
}

const creditKey = (deps: PlannerDeps, country: Country): string => `${deps.prefix}:plan:credit:${country}`;

/**
 * The credit of a pass: what the sustainable rate accrued since the last pass, the fraction carried,
 * up to what the horizon allows (a scheduler that was away does not come back with a burst) but
 * never less than two calls, so that a low rate's fraction is not lost between ticks. The first
 * pass of all starts with one horizon's worth. No rate, no credit: the day is spent.
 */
async function accrue(deps: PlannerDeps, country: Country, rate: number, now: number): Promise<{ credit: number; cap: number }> {
  const [credit, at] = await deps.redis.hmget(creditKey(deps, country), 'credit', 'at');
  const cap = rate > 0 ? Math.max(2, rate * deps.workers.scheduler.horizonS) : 0;
  if (credit === null || at === null) return { credit: rate * deps.workers.scheduler.horizonS, cap };
  const elapsedS = Math.max(0, (now - Number(at)) / 1_000);
  return { credit: Math.min(cap, Number(credit) + rate * elapsedS), cap };
}

async function keepCredit(deps: PlannerDeps, country: Country, credit: number, now: number): Promise<void> {
  await deps.redis.multi().hset(creditKey(deps, country), 'credit', String(credit), 'at', String(now)).pexpire(creditKey(deps, country), 86_400_000).exec();
}

/**
 * One planning pass for one country. The budget is the credit accrued since the last pass at the
 * sustainable rate (so the day's quota is spread over the day), within what the queue may hold for
 * the horizon. Takes that many batches of due products from MongoDB, priority 1 first and the most
 * overdue first, claims them with a lease and enqueues them in one round trip. A call is the scarce
 * unit: a part-filled last batch waits in MongoDB until its products have been due for
 * SCHEDULER_COALESCE, so a burst of new watches fills batches instead of spending a call each.
 * The backlog beyond the budget stays in MongoDB; a job lost with Redis leaves its products due
 * again when the lease ends.
 */
export async function planCountry(deps: PlannerDeps, country: Country, now = new Date()): Promise<CountryPlan> {
  const queue = deps.jobs.queue(country);
  const products = productModel(deps.mongo);
  const t = now.getTime();
  const empty = { batches: 0, p1: 0, p0: 0 };
  const idle = { country, budget: 0, credit: 0, queued: 0, enqueued: empty, due: null, paused: false, recheckAt: null };

  if (await queue.isPaused()) return { ...idle, paused: true };
  const rate = await sustainableRate(deps.quota, deps.workers.quota[country].perSecond, country, now);
  const counts = await queue.getJobCounts(...STATES);
  const queued = STATES.reduce((n, s) => n + (counts[s] ?? 0), 0);
  const { credit, cap } = await accrue(deps, country, rate, t);
  const budget = Math.max(0, Math.min(Math.floor(credit), Math.ceil(cap) - queued));
  if (budget === 0) {
    await keepCredit(deps, country, credit, t);
    return { ...idle, budget, credit, queued };
  }

  const dueFilter = dueFilterOf(country, now);
  const due = await countDue(deps.mongo, country, now);
  deps.metrics.productsDue.set({ country, priority: '1' }, due.p1);
  deps.metrics.productsDue.set({ country, priority: '0' }, due.p0);
  const capacity = rate * deps.workers.scheduler.horizonS * MAX_ITEMS_PER_CALL;
  deps.metrics.budgetShortfall.set({ country }, capacity > 0 ? (due.p1 + due.p0) / capacity : 0);

  // Read in the plan_due index's order: no in-memory sort, and only what this pass can use.
  const picked = due.p1 + due.p0 === 0 ? [] : await products
    .find(dueFilter)
    .sort({ priority: -1, next_refresh_at: 1 })
    .limit(budget * MAX_ITEMS_PER_CALL)
    .select({ asin: 1, priority: 1, next_refresh_at: 1 })
    .lean();
  let recheckAt: number | null = null;
  const partial = picked.length % MAX_ITEMS_PER_CALL;
  if (partial > 0) {
    const last = picked.slice(picked.length - partial);
    const oldest = Math.min(...last.map((p) => p.next_refresh_at?.getTime() ?? t));
    if (t - oldest < deps.workers.scheduler.coalesceMs) {
      picked.length -= partial;
      recheckAt = oldest + deps.workers.scheduler.coalesceMs;
    }
  }
  if (picked.length === 0) {
    await keepCredit(deps, country, credit, t);
    return { ...idle, budget, credit, queued, due, recheckAt };
  }

  const leaseUntil = t + deps.workers.scheduler.leaseMs;
  const token = randomUUID();
  const mine = await claimProducts(deps.mongo, picked, now, leaseUntil, token);

  let p1 = 0;
  let p0 = 0;
  const batches: { name: 'refresh.p1' | 'refresh.p0'; data: { country: Country; asins: string[]; due: number; claim: string }; opts: { jobId: string } }[] = [];
  // Batches are filled in plan order; one batch may hold the last priority-1 and the first priority-0
  // products (it runs as priority 1): a full batch costs the same call as a short one.
  for (let i = 0; i < mine.length; i += MAX_ITEMS_PER_CALL) {
    const slice = mine.slice(i, i + MAX_ITEMS_PER_CALL);
    const asins = slice.map((p) => p.asin);
    const top = slice.some((p) => p.priority === 1);
    for (const p of slice) if (p.priority === 1) p1++; else p0++;
    const dueAt = Math.min(...slice.map((p) => p.next_refresh_at?.getTime() ?? t));
    batches.push({ name: top ? 'refresh.p1' : 'refresh.p0', data: { country, asins, due: dueAt, claim: token }, opts: { jobId: batchId(country, asins, leaseUntil) } });
  }
  await deps.jobs.addBulk(batches);
  const left = credit - batches.length;
  await keepCredit(deps, country, left, t);
  deps.metrics.planned.inc({ country, priority: '1' }, p1);
  deps.metrics.planned.inc({ country, priority: '0' }, p0);
  return { country, budget, credit: left, queued, enqueued: { batches: batches.length, p1, p0 }, due, paused: false, recheckAt };
}

/** Enqueues a crawl of every watched browse node not crawled within the interval, once a day at most. */
export async function planCrawls(deps: PlannerDeps, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - deps.workers.scheduler.browseIntervalMs);
  const nodes = await watchModel(deps.mongo).distinct('key', {
    kind: 'browse',
    $or: [{ last_crawl_at: null }, { last_crawl_at: mongoose.trusted({ $lt: cutoff }) }],
  });
  let added = 0;
  for (const nodeId of nodes) {
    for (const country of deps.config.countries) {
      // One crawl per node, country and day, however many schedulers ask.
      const crawlId = `crawl-${country}-${nodeId}-${now.toISOString().slice(0, 10)}`;
      await deps.jobs.add('browse.crawl', { country, nodeId, crawlId }, { jobId: `${crawlId}-p1` });
      added++;
    }
  }
  return added;
}

/**
 * Puts back the resolve jobs of EAN imports that have waited longer than a lease: their jobs may
 * have been lost with Redis. The job ids are the ones the api used, so a job that still exists is
 * not added twice, and the handler skips a country that has answered meanwhile. A country that is
 * no longer in COUNTRIES has no worker to answer: its slot fails with a reason, so the import can
 * end (and its code be imported again) instead of resolving for ever.
 */
export async function requeueStalledImports(deps: PlannerDeps, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - deps.workers.scheduler.leaseMs);
  const stalled = await eanImportModel(deps.mongo)
    .find({ status: mongoose.trusted({ $in: ['queued', 'resolving'] }), updated_at: mongoose.trusted({ $lt: cutoff }) })
    .sort({ updated_at: 1 })
    .limit(1_000)
    .lean();
  let added = 0;
  for (const imp of stalled) {
    const importId = imp._id.toHexString();
    for (const c of imp.countries) {
      if (c.status !== 'queued') continue;
      if (!deps.config.countries.includes(c.country)) {
        await recordCountryAnswer(deps.mongo, importId, c.country, 'failed', null, `${c.country} is no longer in COUNTRIES`);
        continue;
      }
      const page = c.page ?? 1;
      await deps.jobs.add('ean.resolve', { country: c.country, importId, userId: imp.user_id.toHexString(), ean: imp.ean, page }, { jobId: eanResolveJobId(importId, c.country, page) });
      added++;
    }
  }
  return added;
}
