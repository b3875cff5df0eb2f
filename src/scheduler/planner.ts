import { createHash, randomUUID } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
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
import type { DailyUsage } from '../quota/daily-usage.js';
import { dayOf, sustainableRate } from '../quota/daily-usage.js';
import { MAX_ITEMS_PER_CALL } from '../upstream/port.js';

export interface PlannerDeps {
  readonly mongo: Connection;
  readonly config: Pick<Config, 'countries' | 'refresh'>;
  readonly workers: WorkersConfig;
  readonly jobs: JobProducer;
  readonly usage: DailyUsage;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** The planner's view of the app's context (the scheduler role's, or a test's). */
export function plannerDepsOf(ctx: AppContext, logger: Logger = ctx.logger): PlannerDeps {
  return { mongo: ctx.mongo, config: ctx.config, workers: ctx.config.workers, jobs: ctx.jobs, usage: ctx.usage, metrics: ctx.metrics, logger };
}

export interface CountryPlan {
  readonly country: Country;
  /** Upstream calls the quota allows in the horizon, less what is already queued. */
  readonly budget: number;
  readonly queued: number;
  readonly enqueued: { readonly batches: number; readonly p1: number; readonly p0: number };
  readonly due: { readonly p1: number; readonly p0: number };
  readonly paused: boolean;
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
 * One planning pass for one country. Takes the due products from MongoDB, priority 1 first and
 * the most overdue first, as many as the quota can serve within the horizon (less what is already
 * queued), in batches of 10; claims them with a lease and enqueues them. The backlog beyond the
 * budget stays in MongoDB; a job lost with Redis leaves its products due again when the lease ends.
 */
export async function planCountry(deps: PlannerDeps, country: Country, now = new Date()): Promise<CountryPlan> {
  const queue = deps.jobs.queue(country);
  const products = productModel(deps.mongo);
  const dueFilter = dueFilterOf(country, now);
  const { p1: p1Due, p0: p0Due } = await countDue(deps.mongo, country, now);
  deps.metrics.productsDue.set({ country, priority: '1' }, p1Due);
  deps.metrics.productsDue.set({ country, priority: '0' }, p0Due);
  const empty = { batches: 0, p1: 0, p0: 0 };
  const due = { p1: p1Due, p0: p0Due };

  if (await queue.isPaused()) return { country, budget: 0, queued: 0, enqueued: empty, due, paused: true };
  const counts = await queue.getJobCounts(...STATES);
  const queued = STATES.reduce((n, s) => n + (counts[s] ?? 0), 0);
  const quota = deps.workers.quota[country];
  const rate = sustainableRate(quota, await deps.usage.used(country, now), now);
  const budget = Math.max(0, Math.floor(rate * deps.workers.scheduler.horizonS) - queued);
  const capacity = rate * deps.workers.scheduler.horizonS * MAX_ITEMS_PER_CALL;
  deps.metrics.budgetShortfall.set({ country }, capacity > 0 ? (p1Due + p0Due) / capacity : 0);
  if (budget === 0 || p1Due + p0Due === 0) return { country, budget, queued, enqueued: empty, due, paused: false };

  // Read in the plan_due index's order: no in-memory sort, and only what this pass can use.
  const picked = await products
    .find(dueFilter)
    .sort({ priority: -1, next_refresh_at: 1 })
    .limit(budget * MAX_ITEMS_PER_CALL)
    .select({ asin: 1, priority: 1, next_refresh_at: 1 })
    .lean();
  if (picked.length === 0) return { country, budget, queued, enqueued: empty, due, paused: false };

  // Claim with a lease: only products still due move, so of two passes racing for the same products
  // each gets a disjoint share (one document's update is atomic). The lease is long enough for the
  // queued work to be served, short enough that work lost with Redis comes back soon.
  const leaseUntil = now.getTime() + deps.workers.scheduler.leaseMs;
  const token = randomUUID();
  await products.updateMany(
    { _id: mongoose.trusted({ $in: picked.map((p) => p._id) }), next_refresh_at: mongoose.trusted({ $lte: now }) },
    { $set: { next_refresh_at: new Date(leaseUntil), plan_token: token } },
  );
  const claimed = new Set((await products.find({ _id: mongoose.trusted({ $in: picked.map((p) => p._id) }), plan_token: token }).select({ _id: 1 }).lean()).map((p) => String(p._id)));
  const mine = picked.filter((p) => claimed.has(String(p._id)));

  let p1 = 0;
  let p0 = 0;
  const batches: { name: 'refresh.p1' | 'refresh.p0'; data: { country: Country; asins: string[]; due: number }; opts: { jobId: string } }[] = [];
  // Batches are filled in plan order; one batch may hold the last priority-1 and the first priority-0
  // products (it runs as priority 1): a full batch costs the same call as a short one.
  for (let i = 0; i < mine.length; i += MAX_ITEMS_PER_CALL) {
    const slice = mine.slice(i, i + MAX_ITEMS_PER_CALL);
    const asins = slice.map((p) => p.asin);
    const top = slice.some((p) => p.priority === 1);
    for (const p of slice) if (p.priority === 1) p1++; else p0++;
    const dueAt = Math.min(...slice.map((p) => p.next_refresh_at?.getTime() ?? now.getTime()));
    batches.push({ name: top ? 'refresh.p1' : 'refresh.p0', data: { country, asins, due: dueAt }, opts: { jobId: batchId(country, asins, leaseUntil) } });
  }
  for (const b of batches) await deps.jobs.add(b.name, b.data, b.opts);
  deps.metrics.planned.inc({ country, priority: '1' }, p1);
  deps.metrics.planned.inc({ country, priority: '0' }, p0);
  return { country, budget, queued, enqueued: { batches: batches.length, p1, p0 }, due, paused: false };
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
      const crawlId = `crawl-${country}-${nodeId}-${dayOf(now)}`;
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
