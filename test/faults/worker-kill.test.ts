import mongoose from 'mongoose';
import { QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completions, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { testEnv, mongoUriFor } from '../helpers/context.js';
import { exitOf, spawnCli, waitForLog } from '../helpers/cli.js';
import { productModel } from '../../src/models/product.js';
import { queueName, queuePrefix } from '../../jobs/queue-names.js';
import { startWorkerRole } from '../../src/app/roles/worker.js';
import { asins, until } from './helpers.js';
import { connectTestRedis } from '../helpers/test-redis.js';

/**
 * Injects: SIGKILL to a worker process while its batch waits on the upstream (no drain, no lock
 * release). Must hold: once the job's lock (WORKER_LOCK_MS = 5 s) expires, another worker's
 * stalled check takes the job back and does it; every product of the batch is written exactly once,
 * by that worker, in one write. Measured: the job's final state and stalled count, upstream calls for
 * the batch (the dead worker's one and the redo), and the products' write stamps.
 */
const LOCK_MS = 5_000;
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({ WORKER_LOCK_MS: String(LOCK_MS) });
  // The in-process workers must not take the job first: the child process is the victim.
  await p.workers.close();
});
afterAll(async () => {
  await p?.close();
});

describe('a worker killed mid-batch', () => {
  it('the batch is redone by another worker after the lock expires, and written once', { timeout: 45_000 }, async () => {
    p.sim.faults.update({ latencyMs: 2_000 });
    const list = asins('B0KILL', 10);
    const products = productModel(p.ctx.mongo);
    await products.insertMany(
      list.map((asin) => ({
        country: 'JP',
        asin,
        priority: 1,
        next_refresh_at: new Date(Date.now() + 3_600_000),
        created_at: new Date(),
        status: 'pending',
      })),
    );
    const uri = mongoUriFor(p.ctx.mongo.name);
    const child = spawnCli(
      ['worker'],
      testEnv({
        MONGODB_URI: uri,
        REDIS_PREFIX: p.ctx.redisPrefix,
        COUNTRIES: 'JP',
        SIMULATOR_URL: p.sim.url,
        QUOTA_RPS: '50',
        WORKER_LOCK_MS: String(LOCK_MS),
      }),
    );
    const eventsRedis = connectTestRedis('events');
    const events = new QueueEvents(queueName('JP'), {
      connection: eventsRedis,
      prefix: queuePrefix(p.ctx.redisPrefix, 'JP'),
    });
    try {
      await waitForLog(child, (l) => l.msg === 'workers started');
      await events.waitUntilReady();
      const active = new Promise<string>((resolve) => events.once('active', ({ jobId }) => resolve(jobId)));
      const callsBefore = p.sim.stats().countries.JP?.getItems?.calls ?? 0;
      const jobId = await p.ctx.jobs.add('refresh.p1', { country: 'JP', asins: list });
      expect(await active).toBe(jobId);
      // The call is at the simulator (held for 2 s) when the worker dies.
      await until('the batch call reached the upstream', async () => (p.sim.stats().countries.JP?.getItems?.calls ?? 0) > callsBefore);
      const killedAt = new Date();
      child.kill('SIGKILL');
      expect((await exitOf(child)).signal).toBe('SIGKILL');
      expect(
        await products.countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: mongoose.trusted({ $ne: null }) }),
      ).toBe(0);

      // Another worker (in this process) with the same lock settings picks the stalled job up.
      const stalled = new Promise<string>((resolve) => events.once('stalled', ({ jobId: id }) => resolve(id)));
      const rescuer = await startWorkerRole(p.ctx, { simulatorUrl: p.sim.url });
      const [done] = await completions(rescuer.workers.get('JP')!, 1, 40_000);
      expect(await stalled).toBe(jobId);
      expect(done!.id).toBe(jobId);

      const job = await p.ctx.jobs.queue('JP').getJob(jobId);
      expect(await job!.getState()).toBe('completed');
      expect(job!.stalledCounter).toBe(1);
      // Not failed and retried: the stall does not use an attempt.
      expect(job!.attemptsMade).toBeLessThanOrEqual(1);
      // Exactly two upstream calls for the batch: the dead worker's and the redo.
      expect(p.sim.stats().countries.JP!.getItems!.calls - callsBefore).toBe(2);
      const docs = await products.find({ asin: mongoose.trusted({ $in: list }) }).lean();
      expect(docs).toHaveLength(10);
      // One bulk write stamped them all with one time, after the kill: the dead worker wrote nothing.
      const stamps = new Set(docs.map((d) => d.last_attempt_at?.getTime()));
      expect(stamps.size).toBe(1);
      expect([...stamps][0]!).toBeGreaterThan(killedAt.getTime());
      expect(docs.every((d) => d.status !== 'pending')).toBe(true);
      await rescuer.close();
    } finally {
      p.sim.faults.update({ latencyMs: 0 });
      await events.close();
      eventsRedis.disconnect();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
