import cron, { type ScheduledTask } from 'node-cron';
import type { Redis } from 'ioredis';
import { planCountry, planCrawls, requeueStalledImports, type CountryPlan, type PlannerDeps } from './planner.js';
import { withLock } from './lock.js';

export interface RunningScheduler {
  /** One planning pass now (also what each tick runs); undefined when another scheduler holds the lock. */
  planNow(): Promise<CountryPlan[] | undefined>;
  crawlNow(): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * The scheduler role: node-cron ticks that only plan and enqueue (the work itself is the workers').
 * A Redis lock makes two schedulers, or a slow tick and the next one, plan one at a time, so nothing
 * is enqueued twice; the job ids are deterministic as a second guard.
 */
export function startScheduler(deps: PlannerDeps, redis: Redis, prefix: string): RunningScheduler {
  const lockTtl = Math.max(30_000, deps.workers.scheduler.horizonS * 1_000);
  const inFlight = new Set<Promise<unknown>>();
  let closing: Promise<void> | undefined;
  // Every pass is tracked, whoever starts it (a tick, the start-up pass, or the api's nudge through
  // planNow), and none starts once closing began, so close() waits for all of them. Before, a nudged
  // pass was not waited for: on SIGTERM it ran on while Redis and MongoDB closed under it, could not
  // release the plan lock, and every scheduler stopped planning until the lock's TTL ran out.
  // Found by test/faults/sigterm.test.ts.
  const tracked = <T>(fn: () => Promise<T | undefined>) => (): Promise<T | undefined> => {
    if (closing) return Promise.resolve(undefined);
    const run = fn();
    inFlight.add(run);
    void run.finally(() => inFlight.delete(run)).catch(() => undefined);
    return run;
  };

  const planNow = async (): Promise<CountryPlan[] | undefined> => {
    const res = await withLock(redis, `${prefix}:lock:plan`, lockTtl, async () => {
      const plans: CountryPlan[] = [];
      for (const country of deps.config.countries) plans.push(await planCountry(deps, country));
      return plans;
    });
    if (!res.ran) return undefined;
    for (const p of res.value) {
      if (p.enqueued.batches || p.due.p0 + p.due.p1 > 0) {
        const level = p.due.p0 + p.due.p1 > p.enqueued.p0 + p.enqueued.p1 && p.budget > 0 ? 'info' : 'debug';
        deps.logger[level]({ plan: p }, p.due.p0 + p.due.p1 > p.enqueued.p0 + p.enqueued.p1
          ? `demand exceeds the quota in ${p.country}: ${p.due.p1 + p.due.p0 - p.enqueued.p1 - p.enqueued.p0} due products wait in MongoDB (priority 0 stretches first)`
          : 'planned');
      }
    }
    return res.value;
  };
  // The slow tick also puts back EAN resolve jobs that Redis may have lost.
  const crawlNow = async (): Promise<number | undefined> => {
    const res = await withLock(redis, `${prefix}:lock:crawl`, lockTtl, async () => (await planCrawls(deps)) + (await requeueStalledImports(deps)));
    return res.ran ? res.value : undefined;
  };

  // Ticks never throw: a failed pass is logged and the next tick tries again.
  const guard = (name: string, fn: () => Promise<unknown>) => (): void => {
    void fn().catch((err: Error) => deps.logger.warn({ tick: name, err: { name: err.name, message: err.message } }, 'scheduler tick failed; the next tick tries again'));
  };
  const tasks: ScheduledTask[] = [
    cron.schedule(deps.workers.scheduler.refreshCron, guard('plan', tracked(planNow)), { name: 'plan-refreshes', noOverlap: true }),
    cron.schedule(deps.workers.scheduler.browseCron, guard('crawl', tracked(crawlNow)), { name: 'plan-crawls', noOverlap: true }),
  ];
  // Plan once at start: a restarted scheduler should not wait a whole interval.
  guard('plan', tracked(planNow))();
  guard('crawl', tracked(crawlNow))();
  deps.logger.info({ refresh: deps.workers.scheduler.refreshCron, crawl: deps.workers.scheduler.browseCron }, 'scheduler started');

  return {
    planNow: tracked(planNow),
    crawlNow: tracked(crawlNow),
    close() {
      closing ??= (async () => {
        await Promise.all(tasks.map((t) => t.stop()));
        await Promise.all(tasks.map((t) => t.destroy()));
        await Promise.allSettled(inFlight);
      })();
      return closing;
    },
  };
}
