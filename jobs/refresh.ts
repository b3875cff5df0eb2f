import mongoose from 'mongoose';
import { z } from 'zod';
import { countrySchema } from '../src/core/identifiers.js';
import { readPrior, writeOutcomes } from '../src/catalog/writes.js';
import { productModel } from '../src/models/product.js';
import { DayQuotaSpentError } from '../src/core/errors.js';
import { claimMoreDue } from '../src/scheduling/due.js';
import { asinBatchSchema, MAX_ITEMS_PER_CALL } from '../src/upstream/port.js';
import { defineJob } from './kind.js';
import type { JobContext, JobRun } from './context.js';
import { DEFAULT_RETRY } from '../config/retry.js';
import { nextRefreshAt } from '../src/scheduling/change-rate.js';

/**
 * Scheduled refreshes: a batch of up to 10 due products of one country, planned by src/scheduling/planner.ts
 * in the products' effective priority. The forced update (jobs/forced-update.ts) refreshes the same
 * way, from a queue of its own.
 */

const refreshPayload = z.object({
  country: countrySchema,
  asins: asinBatchSchema,
  /** The earliest due time in the batch (epoch ms), for the refresh-lag metric. */
  due: z.number().int().optional(),
  /** The plan's token on the products: a worker skips those whose claim has moved on. */
  claim: z.string().max(64).optional(),
  /**
   * Every product of the batch is past its accounts' fair shares of a pass short of quota or of a backlogged queue's room
   * (src/scheduling/due.ts): it runs behind the in-share batches of its priority.
   */
  over: z.boolean().optional(),
});
export type RefreshPayload = z.output<typeof refreshPayload>;

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

export type RefreshMode = 'forced' | 'p1' | 'p0';

/**
 * One getItems call and one bulkWrite. A scheduled batch refreshes only the products that still
 * hold its claim, fills the room a forced update left with further due products of its priority,
 * and when the day's quota is spent gives its products back to the planner (due as they were)
 * instead of waiting in Redis: the backlog belongs in MongoDB, where the planner spreads the next
 * day's quota over it. A forced update carries no plan's claim and refreshes what it was given.
 */
export async function refreshBatch(ctx: JobContext, data: RefreshPayload, run: JobRun, mode: RefreshMode): Promise<RefreshResult> {
  const claim = mode === 'forced' ? undefined : data.claim;
  // The products' state before the call is read with the claim's check (one query): those that no
  // longer hold it were taken over by a forced update, or a later plan after a lost job, and
  // refreshing them here would spend the quota twice on one product within one lease. A forced
  // update reads them while its call is out.
  const held = claim ? await readPrior(ctx.mongo, data.country, data.asins, { plan_token: claim }) : undefined;
  const asins = held ? data.asins.filter((a) => held.get(a)) : [...data.asins];
  const skipped = data.asins.length - asins.length;
  if (claim && skipped > 0 && asins.length > 0) {
    asins.push(
      ...(await claimMoreDue(
        ctx.mongo,
        data.country,
        MAX_ITEMS_PER_CALL - asins.length,
        ctx.config.workers.scheduler.leaseMs,
        claim,
        mode === 'p1',
      )),
    );
  }
  const base = { country: data.country, asins, skipped };
  if (asins.length === 0) return { ...base, found: 0, notFound: 0, notAccessible: 0, deferred: false };

  const prior = held ? Promise.resolve(held) : readPrior(ctx.mongo, data.country, asins);
  // Settled by the write below, or left when the call fails.
  prior.catch(() => undefined);
  let result;
  try {
    result = await run.upstream.getItems(asins);
  } catch (err) {
    if (!(err instanceof DayQuotaSpentError) || !claim) throw err;
    await productModel(ctx.mongo).updateMany(
      { country: data.country, asin: mongoose.trusted({ $in: asins }), plan_token: claim },
      { $set: { next_refresh_at: nextRefreshAt({ why: 'given-back', due: new Date(data.due ?? Date.now()) }), plan_token: null } },
    );
    return { ...base, found: 0, notFound: 0, notAccessible: 0, deferred: true };
  }
  // Unreadable, the policy is left out: the products get the interval of one expected change.
  const policy = ctx.config.refresh.scheduling === 'adaptive' ? await ctx.policies.read(data.country).catch(() => null) : null;
  const written = await writeOutcomes(ctx.mongo, ctx.config, data.country, result.items, result.outcomes, {
    prior: await prior,
    policy,
    onChanges: (changes, written) => ctx.deliveries.enqueueFor(changes, written).then(() => undefined),
  });
  ctx.metrics.changesObserved.inc({ country: data.country, priority: mode === 'forced' ? 'forced' : mode.slice(1) }, written.moved);
  if (data.due !== undefined) {
    ctx.metrics.refreshLag.observe(
      { country: data.country, priority: mode === 'forced' ? 'forced' : mode.slice(1) },
      Math.max(0, Date.now() - data.due) / 1_000,
    );
  }
  return { ...base, found: written.found, notFound: written.notFound, notAccessible: written.notAccessible, deferred: false };
}

// A batch with a plan's claim gives its products back itself (refreshBatch); one without waits for
// the next quota day with nothing to note.
const giveBack = async (): Promise<void> => undefined;

/**
 * A refresh batch's place in its country's refresh queue, as a BullMQ priority. BullMQ runs lower
 * numbers first and reads 0 as "no priority" (such a job would run before every prioritised one),
 * so a watch's priority (1 urgent, 0 normal) is mapped rather than used: priority-1 batches take 1
 * and priority-0 batches 3. A batch whose products are all beyond their accounts' shares of the
 * pass (`over`, src/scheduling/due.ts) takes the number after its priority's (2, 4): it
 * runs behind every in-share batch of its priority and still before any batch of the priority
 * below, so a watch's priority stays the first order and the share the second.
 */
export function refreshQueuePriority(watchPriority: 0 | 1, over: boolean): number {
  return (watchPriority === 1 ? 1 : 3) + (over ? 1 : 0);
}

export const refreshP1Job = defineJob({
  name: 'refresh.p1',
  payload: refreshPayload,
  cls: 'refresh',
  priority: refreshQueuePriority(1, false),
  priorityFor: (data) => refreshQueuePriority(1, data.over === true),
  retry: DEFAULT_RETRY,
  whenDaySpent: giveBack,
  run: (ctx, data, run) => refreshBatch(ctx, data, run, 'p1'),
});

export const refreshP0Job = defineJob({
  name: 'refresh.p0',
  payload: refreshPayload,
  cls: 'refresh',
  priority: refreshQueuePriority(0, false),
  priorityFor: (data) => refreshQueuePriority(0, data.over === true),
  retry: DEFAULT_RETRY,
  whenDaySpent: giveBack,
  run: (ctx, data, run) => refreshBatch(ctx, data, run, 'p0'),
});
