import mongoose from 'mongoose';
import type { JobContext } from '../context.js';
import type { JobPayload } from '../../jobs/registry.js';
import { writeOutcomes } from '../catalog-writes.js';
import { productModel } from '../../src/models/product.js';
import { DayQuotaSpentError } from '../../src/quota/errors.js';
import { claimMoreDue } from '../../src/scheduler/planner.js';
import { MAX_ITEMS_PER_CALL } from '../../src/upstream/port.js';

export interface RefreshResult {
  readonly country: string;
  readonly asins: readonly string[];
  readonly found: number;
  readonly notFound: number;
  readonly notAccessible: number;
  /** ASINs left out because their claim moved on (claimed again, or refreshed meanwhile). */
  readonly skipped: number;
  /** True when the day's quota was spent: the products went back to the planner, unrefreshed. */
  readonly deferred: boolean;
}

type RefreshData = JobPayload<'refresh.p0' | 'refresh.p1' | 'world.update'>;

/**
 * The ASINs of a planned batch that still hold its claim. A forced update of one of them, or a
 * later plan after a lost job, moved the claim on: refreshing them here would spend the quota twice
 * on the same product within one lease.
 */
async function stillClaimed(ctx: JobContext, data: RefreshData & { claim: string }): Promise<string[]> {
  const held = await productModel(ctx.mongo)
    .find({ country: data.country, asin: mongoose.trusted({ $in: data.asins }), plan_token: data.claim })
    .select({ asin: 1 })
    .lean();
  const mine = new Set(held.map((p) => p.asin));
  return data.asins.filter((a) => mine.has(a));
}

/**
 * A batch of up to 10 ASINs of one country: one getItems call, one bulkWrite. Used by the scheduled
 * refreshes and by the forced update, which differ in their queue and their lane of the quota.
 * A scheduled batch refreshes only the products that still hold its claim, and when the day's quota
 * is spent gives them back to the planner (due as they were) instead of waiting in Redis: the
 * backlog belongs in MongoDB, where the planner spreads the next day's quota over it.
 */
export async function refreshBatch(ctx: JobContext, data: RefreshData, job: 'world.update' | 'refresh.p1' | 'refresh.p0'): Promise<RefreshResult> {
  const forced = job === 'world.update';
  const priorityLabel = forced ? 'forced' : job === 'refresh.p1' ? '1' : '0';
  const claim = !forced ? data.claim : undefined;
  const asins = claim ? await stillClaimed(ctx, { ...data, claim }) : [...data.asins];
  const skipped = data.asins.length - asins.length;
  // Products a forced update took over leave room in the call: fill it with the next due ones.
  if (claim && skipped > 0 && asins.length > 0) {
    asins.push(...await claimMoreDue(ctx.mongo, data.country, MAX_ITEMS_PER_CALL - asins.length, ctx.workers.scheduler.leaseMs, claim, job === 'refresh.p1'));
  }
  const base = { country: data.country, asins, skipped };
  if (asins.length === 0) return { ...base, found: 0, notFound: 0, notAccessible: 0, deferred: false };

  let result;
  try {
    result = await ctx.upstream(data.country, job).getItems(asins);
  } catch (err) {
    if (!(err instanceof DayQuotaSpentError) || !claim) throw err;
    const due = new Date('due' in data && data.due !== undefined ? data.due : Date.now());
    await productModel(ctx.mongo).updateMany(
      { country: data.country, asin: mongoose.trusted({ $in: asins }), plan_token: claim },
      { $set: { next_refresh_at: due, plan_token: null } },
    );
    return { ...base, found: 0, notFound: 0, notAccessible: 0, deferred: true };
  }
  const written = await writeOutcomes(ctx.mongo, ctx.config, data.country, result.items, result.outcomes);
  if ('due' in data && data.due !== undefined) {
    ctx.metrics.refreshLag.observe({ country: data.country, priority: priorityLabel }, Math.max(0, Date.now() - data.due) / 1_000);
  }
  return { ...base, found: written.found, notFound: written.notFound, notAccessible: written.notAccessible, deferred: false };
}
