import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asins, insertDue, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { testEnv, mongoUriFor } from '../helpers/context.js';
import { exitOf, spawnCli, waitForLog } from '../helpers/cli.js';
import { planCountry, STEP_CALLS } from '../../src/scheduling/planner.js';
import { productModel } from '../../src/models/product.js';
import { until } from './helpers.js';
import { startWorkerRole } from '../../src/app/roles/worker.js';

/**
 * Injects: SIGKILL to a scheduler process in the middle of a planning pass, right after its first
 * step's claim reached MongoDB. Must hold: the pass's claims are chunked, so what the dead process
 * claimed is one step's products at most; those it never queued come due when their lease ends and
 * are planned then, the rest is planned at once by the next pass, and every product is refreshed
 * exactly once. Measured: products claimed by the dead pass, jobs it queued, and every completed
 * job's ASINs.
 */
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline();
});
afterAll(async () => {
  await p?.close();
});

describe('a scheduler killed mid-pass', () => {
  it(
    'leaves at most one step claimed without jobs, which comes back when its lease ends; all refreshed once',
    { timeout: 120_000 },
    async () => {
      const total = 3 * STEP_CALLS * 10;
      const list = await insertDue(p.ctx.mongo, asins('B0SKIL', total));
      const products = productModel(p.ctx.mongo);
      const queue = p.ctx.jobs.queue('JP');
      // Its jobs run only after the kill, so what it queued is what the queue holds.
      await p.workers.close();
      const child = spawnCli(
        ['scheduler'],
        testEnv({
          MONGODB_URI: mongoUriFor(p.ctx.mongo.name),
          REDIS_PREFIX: p.ctx.redisPrefix,
          COUNTRIES: 'JP',
          QUOTA_RPS: '50',
          QUOTA_PER_DAY: '100000000',
          SCHEDULER_REFRESH_CRON: '0 0 1 1 *',
          SCHEDULER_BROWSE_CRON: '0 0 1 1 *',
          SCHEDULER_COALESCE: '0',
        }),
      );
      try {
        await waitForLog(child, (l) => l.msg === 'scheduler started');
        await until(
          'the first claim',
          async () => (await products.countDocuments({ plan_token: mongoose.trusted({ $ne: null }) })) > 0,
          20_000,
          2,
        );
        child.kill('SIGKILL');
        expect((await exitOf(child)).signal).toBe('SIGKILL');
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }

      // A claim is one updateMany; the server finishes one the dead process sent (it yields between
      // documents, so a count may see it half done): wait until the claimed count holds still.
      let seen = -1;
      await until(
        "the dead pass's last claim settled",
        async () => {
          const n = await products.countDocuments({ plan_token: mongoose.trusted({ $ne: null }) });
          const still = n === seen;
          seen = n;
          return still || undefined;
        },
        20_000,
        250,
      );
      const claimed = await products
        .find({ plan_token: mongoose.trusted({ $ne: null }) })
        .select({ asin: 1, next_refresh_at: 1 })
        .lean();
      const queued = new Set((await queue.getJobs(['prioritized', 'waiting'])).flatMap((j) => (j.data as { asins: string[] }).asins));
      const orphans = claimed.filter((c) => !queued.has(c.asin)).map((c) => c.asin);
      // Killed mid-pass: the pass did not plan everything, and no more than one step's claim went unqueued.
      expect(claimed.length).toBeLessThan(total);
      expect(orphans.length).toBeLessThanOrEqual(STEP_CALLS * 10);
      // Nothing is lost: an orphan's next refresh is its lease's end, not never.
      const leaseMs = p.config.workers.scheduler.leaseMs;
      for (const c of claimed) expect(c.next_refresh_at!.getTime()).toBeLessThanOrEqual(Date.now() + leaseMs);

      // The next pass takes what was not claimed, and none of what was.
      const next = await planCountry(p.planner, 'JP');
      expect(next.enqueued.p1).toBe(total - claimed.length);
      // Once every queued job has run, the orphans are all that is left.
      const workers = await startWorkerRole(p.ctx, { simulatorUrl: p.sim.url });
      try {
        await until('the queue drained', async () => (await queue.count()) === 0 && (await queue.getActiveCount()) === 0, 90_000, 100);
        const left = await products
          .find({ asin: mongoose.trusted({ $in: list }), last_attempt_at: null })
          .select({ asin: 1 })
          .lean();
        expect(left.map((d) => d.asin).sort()).toEqual([...orphans].sort());
        // When their lease ends they are due again, and planned.
        const later = await planCountry(p.planner, 'JP', new Date(Date.now() + leaseMs + 1_000));
        expect(later.enqueued.p1).toBe(orphans.length);
        await until(
          'the queue drained again',
          async () => (await queue.count()) === 0 && (await queue.getActiveCount()) === 0,
          90_000,
          100,
        );
      } finally {
        await workers.close();
      }
      expect(await products.countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: null })).toBe(0);
      // Exactly once: no ASIN in two completed batches.
      const done = (await queue.getJobs(['completed'], 0, -1)).flatMap((j) => (j.data as { asins: string[] }).asins);
      expect(done).toHaveLength(total);
      expect(new Set(done).size).toBe(total);
    },
  );
});
