import cron, { type ScheduledTask } from 'node-cron';
import pLimit from 'p-limit';
import type { Logger } from '../logger.js';
import { withLock } from './lock.js';
import { once } from '../lifecycle/once.js';
import { planCountry, type CountryPlan, type PlannerContext } from './planner.js';
import { planCrawls, type CrawlPlanDeps } from './crawls.js';
import { sharedTag } from '../db/redis-keys.js';

export interface RunningScheduler {
  /** One planning pass now (also what each tick runs); undefined when another scheduler holds the lock. */
  planNow(): Promise<CountryPlan[] | undefined>;
  crawlNow(): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * Work that the slow tick runs after the crawls, under the same lock, returning how many jobs it
 * enqueued. The composition hands these in: what they sweep (EAN imports) is built on scheduling.
 */
export type Sweep = () => Promise<number>;

/** Countries planned at once: each pass is a few MongoDB and Redis round trips. */
const COUNTRIES_AT_ONCE = 4;

/**
 * The scheduler role's ticks: node-cron ticks that only plan and enqueue (the work itself is the
 * workers'): refreshes on SCHEDULER_REFRESH_CRON; crawls, and then the `sweeps`, on
 * SCHEDULER_BROWSE_CRON. A Redis lock makes two schedulers, or a slow tick and the next
 * one, plan one at a time, so nothing is enqueued twice; the job ids are deterministic as a second guard.
 */
export function startScheduler(
  ctx: PlannerContext & CrawlPlanDeps & { readonly logger: Logger },
  logger: Logger = ctx.logger,
  sweeps: readonly Sweep[] = [],
): RunningScheduler {
  const { redis, redisPrefix: prefix } = ctx;
  const lockTtl = 30_000;
  const inFlight = new Set<Promise<unknown>>();
  let recheck: NodeJS.Timeout | undefined;
  let tasks: ScheduledTask[] = [];
  const close = once(async () => {
    clearTimeout(recheck);
    await Promise.all(tasks.map((t) => t.stop()));
    await Promise.all(tasks.map((t) => t.destroy()));
    await Promise.allSettled(inFlight);
  });
  // Every pass is tracked, whoever starts it (a tick, the start-up pass, a recheck, or the api's
  // nudge through planNow), and none starts once closing began, so close() waits for all of them:
  // a pass left running while Redis and MongoDB close could not release the plan lock, and every
  // scheduler would stop planning until the lock's TTL ran out.
  const tracked =
    <T>(fn: () => Promise<T | undefined>) =>
    (): Promise<T | undefined> => {
      if (close.started) return Promise.resolve(undefined);
      const run = fn();
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run)).catch(() => undefined);
      return run;
    };

  const perCountry = pLimit(COUNTRIES_AT_ONCE);
  const planNow = async (): Promise<CountryPlan[] | undefined> => {
    const res = await withLock(redis, `${sharedTag(prefix, 'locks')}:plan`, lockTtl, () =>
      Promise.all(ctx.config.countries.map((country) => perCountry(() => planCountry(ctx, country)))),
    );
    if (!res.ran) return undefined;
    for (const p of res.value) {
      const due = p.due ? p.due.p0 + p.due.p1 : 0;
      const planned = p.enqueued.p0 + p.enqueued.p1;
      if (p.enqueued.batches || due > 0) {
        logger[due > planned && p.budget > 0 ? 'info' : 'debug'](
          { plan: p },
          due > planned
            ? `demand exceeds the quota in ${p.country}: ${due - planned} due products wait in MongoDB (priority 0 stretches first)`
            : 'planned',
        );
      }
    }
    // A part-filled batch was held back for more products: plan again when it may go as it is.
    const next = Math.min(...res.value.map((p) => p.recheckAt ?? Infinity));
    if (Number.isFinite(next) && !close.started) {
      clearTimeout(recheck);
      recheck = setTimeout(guard('plan', tracked(planNow)), Math.max(0, next - Date.now()) + 10);
    }
    return res.value;
  };
  const crawlNow = async (): Promise<number | undefined> => {
    const res = await withLock(redis, `${sharedTag(prefix, 'locks')}:crawl`, lockTtl, async () => {
      let enqueued = await planCrawls(ctx);
      for (const sweep of sweeps) enqueued += await sweep();
      return enqueued;
    });
    return res.ran ? res.value : undefined;
  };

  // Ticks never throw: a failed pass is logged and the next tick tries again. The handler returns
  // its promise, which is what node-cron's noOverlap waits for before it starts the next run.
  function guard(name: string, fn: () => Promise<unknown>) {
    return (): Promise<void> =>
      fn().then(
        () => undefined,
        (err: Error) => {
          logger.warn({ tick: name, err: { name: err.name, message: err.message } }, 'scheduler tick failed; the next tick tries again');
        },
      );
  }
  tasks = [
    cron.schedule(ctx.config.workers.scheduler.refreshCron, guard('plan', tracked(planNow)), { name: 'plan-refreshes', noOverlap: true }),
    cron.schedule(ctx.config.workers.scheduler.browseCron, guard('crawl', tracked(crawlNow)), { name: 'plan-crawls', noOverlap: true }),
  ];
  // Plan once at start: a restarted scheduler should not wait a whole interval.
  void guard('plan', tracked(planNow))();
  void guard('crawl', tracked(crawlNow))();
  logger.info({ refresh: ctx.config.workers.scheduler.refreshCron, crawl: ctx.config.workers.scheduler.browseCron }, 'scheduler started');

  return { planNow: tracked(planNow), crawlNow: tracked(crawlNow), close };
}
