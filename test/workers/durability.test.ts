import mongoose from 'mongoose';
import { QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asins, completedInQueue, startPipeline, type Pipeline, insertDue } from '../helpers/pipeline.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { requeueStalledImports } from '../../src/watch/ean-imports.js';
import { productModel } from '../../src/models/product.js';
import { eanImportModel } from '../../src/models/ean-import.js';
import { queueName, queuePrefix } from '../../jobs/queue-names.js';
import { exitOf, spawnCli, waitForLog } from '../helpers/cli.js';
import { mongoUriFor, testEnv } from '../helpers/context.js';
import { startWorkerRole } from '../../src/app/roles/worker.js';
import { dropKeys } from '../helpers/redis-keys.js';
import { connectTestRedis } from '../helpers/test-redis.js';

let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({ SCHEDULER_LEASE: '10m', UPDATE_WAIT: '1s' });
});
afterAll(async () => {
  await p?.close();
});

const products = () => productModel(p.ctx.mongo);

describe('durability', () => {
  it('Redis flushed after planning: the products come due again when their lease ends and are all refreshed', async () => {
    const list = asins('B0FLUSH', 30);
    await insertDue(p.ctx.mongo, list);
    const queue = p.ctx.jobs.queue('JP');
    // No worker runs while the jobs are lost, as when Redis goes down between plan and work.
    await p.workers.close();
    const first = await planCountry(p.planner, 'JP');
    expect(first.enqueued.p1).toBe(30);

    // Everything under our prefix goes, as with FLUSHALL on a Redis of our own.
    await dropKeys(p.ctx.redis, p.ctx.redisPrefix);
    expect(await queue.count()).toBe(0);
    // Nothing is due until the lease ends; a plan an instant after it finds all 30 again.
    expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBe(0);
    const again = await planCountry(p.planner, 'JP', new Date(Date.now() + 10 * 60_000 + 1_000));
    expect(again.enqueued.p1).toBe(30);
    const workers = await startWorkerRole(p.ctx, { simulatorUrl: p.sim.url });
    await completedInQueue(p.ctx.jobs.queue('JP'), 3);
    await workers.close();
    expect(await products().countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: null })).toBe(0);
  });

  it('Redis flushed before an EAN import ran: the sweep puts its resolve job back and the import ends', async () => {
    await p.workers.close();
    const u = await p.user('flushed-import@example.com');
    const res = await p.http.post('/api/watch/ean').set(u.headers).send({ ean: '4901234567894' }).expect(202);
    await dropKeys(p.ctx.redis, p.ctx.redisPrefix);
    // Before its lease has passed an import is left alone; after it, its job is added again, once.
    expect(await requeueStalledImports(p.planner)).toBe(0);
    const later = new Date(Date.now() + 10 * 60_000 + 1_000);
    expect(await requeueStalledImports(p.planner, later)).toBe(1);
    await requeueStalledImports(p.planner, later);
    expect(await p.ctx.jobs.queue('JP', 'import').count()).toBe(1);
    const workers = await startWorkerRole(p.ctx, { simulatorUrl: p.sim.url });
    await completedInQueue(p.ctx.jobs.queue('JP', 'import'), 1);
    await workers.close();
    const status = await p.http.get(`/api/watch/ean/${res.body.data.id}`).set(u.headers).expect(200);
    expect(['done', 'not_found']).toContain(status.body.data.status);
  });

  it('an import still waiting on a country that is no longer configured ends, so its code can be imported again', async () => {
    const u = await p.user('dropped-country@example.com');
    const ean = '4901234567894';
    // As left by a run with COUNTRIES=JP,US: JP answered, US never will (this pipeline has JP only).
    const imp = await eanImportModel(p.ctx.mongo).create({
      user_id: new mongoose.Types.ObjectId(u.id),
      ean,
      status: 'resolving',
      pending_key: `${u.id}:${ean}`,
      countries: [
        { country: 'JP', status: 'done', asins: ['B0DROPPED1'], error: null },
        { country: 'US', status: 'queued', asins: [], error: null },
      ],
    });
    expect(await requeueStalledImports(p.planner, new Date(Date.now() + 10 * 60_000 + 1_000))).toBe(0);
    const after = await eanImportModel(p.ctx.mongo).findById(imp._id).lean();
    expect(after?.status).toBe('done');
    expect(after?.pending_key).toBeUndefined();
    expect(after?.countries.find((c) => c.country === 'US')).toMatchObject({ status: 'failed', error: 'US is no longer in COUNTRIES' });
    expect(after?.countries.find((c) => c.country === 'JP')?.asins).toEqual(['B0DROPPED1']);
    // No JP job was added for it (JP had answered), and the code may be imported again.
    expect(await p.ctx.jobs.queue('JP', 'import').count()).toBe(0);
    const again = await p.http.post('/api/watch/ean').set(u.headers).send({ ean }).expect(202);
    expect(again.body.created).toBe(true);
    await p.ctx.jobs.queue('JP', 'import').obliterate({ force: true });
  });

  it('Redis flushed after a forced update was queued: its products come due when the lease ends', async () => {
    await p.workers.close();
    const u = await p.user('flushed-update@example.com');
    const now = Date.now();
    await products().insertMany([
      {
        country: 'JP',
        asin: 'B0FORCED01',
        priority: 0,
        next_refresh_at: new Date(now + 20 * 3_600_000),
        created_at: new Date(now),
        status: 'ok',
      },
      { country: 'JP', asin: 'B0FORCED02', priority: 1, next_refresh_at: new Date(now - 60_000), created_at: new Date(now), status: 'ok' },
    ]);
    // No worker runs: the request gives up waiting (202) and the job sits in Redis, then is lost.
    const res = await p.http.get('/api/world/update?asin=B0FORCED01,B0FORCED02,B0FORCED03&country=JP').set(u.headers).expect(202);
    expect(await p.ctx.jobs.queue('JP', 'forced').getJob(res.body.job.id)).toBeDefined();
    await dropKeys(p.ctx.redis, p.ctx.redisPrefix);

    const byAsin = new Map(
      (
        await products()
          .find({ asin: mongoose.trusted({ $regex: '^B0FORCED' }) })
          .lean()
      ).map((d) => [d.asin, d]),
    );
    // Both claimed by the update until the lease's end: the one due later pulled forward, the one
    // already due held back (the planner must not call for it while the update may still run). An
    // ASIN nobody watches is not created by the request.
    const lease = p.config.workers.scheduler.leaseMs;
    for (const asin of ['B0FORCED01', 'B0FORCED02']) {
      const at = byAsin.get(asin)!.next_refresh_at!.getTime();
      expect(at).toBeGreaterThan(now);
      expect(at).toBeLessThanOrEqual(Date.now() + lease);
      expect(byAsin.get(asin)!.plan_token).toMatch(/^forced-/);
    }
    expect(byAsin.has('B0FORCED03')).toBe(false);
    // The planner leaves them to the (lost) job until the lease ends, then takes them.
    const soon = await planCountry(p.planner, 'JP');
    expect(soon.enqueued.p0 + soon.enqueued.p1).toBe(0);
    const later = await planCountry(p.planner, 'JP', new Date(Date.now() + lease + 1_000));
    expect(later.enqueued).toMatchObject({ p0: 1, p1: 1 });
    // Leave an empty queue to the next test, whose worker must take its own job first.
    await p.ctx.jobs.queue('JP').obliterate({ force: true });
  });

  it('SIGTERM to a worker process during a batch: the batch finishes, the process exits 0, the products are written once', async () => {
    // A slow upstream keeps the batch in flight while the signal arrives.
    p.sim.faults.update({ latencyMs: 1_500 });
    const list = asins('B0SIGTERM', 10);
    // This file's in-process workers must not take the job: the child process is under test.
    await p.workers.close();
    const dbName = p.ctx.mongo.name;
    const uri = mongoUriFor(dbName);
    const child = spawnCli(
      ['worker'],
      testEnv({
        MONGODB_URI: uri,
        REDIS_PREFIX: p.ctx.redisPrefix,
        COUNTRIES: 'JP',
        SIMULATOR_URL: p.sim.url,
        QUOTA_RPS: '50',
        WORKER_SHUTDOWN_MS: '10s',
        SHUTDOWN_TIMEOUT_MS: '15000',
      }),
    );
    // Kept so that a failed exit shows why.
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-6_000)));
    const eventsRedis = connectTestRedis('events');
    const events = new QueueEvents(queueName('JP'), {
      connection: eventsRedis,
      prefix: queuePrefix(p.ctx.redisPrefix, 'JP'),
    });
    try {
      await waitForLog(child, (l) => l.msg === 'workers started');
      await events.waitUntilReady();
      const active = new Promise<string>((resolve) => events.once('active', ({ jobId }) => resolve(jobId)));
      const completed = new Promise<string>((resolve) => events.on('completed', ({ jobId }) => resolve(jobId)));
      const jobId = await p.ctx.jobs.add('refresh.p1', { country: 'JP', asins: list });
      expect(await active).toBe(jobId);
      child.kill('SIGTERM');
      expect(await completed).toBe(jobId);
      expect(await exitOf(child), stderr).toEqual({ code: 0, signal: null });
      const docs = await products()
        .find({ asin: mongoose.trusted({ $in: list }) })
        .lean();
      expect(docs).toHaveLength(10);
      expect(docs.every((d) => d.last_attempt_at !== null)).toBe(true);
      expect(p.sim.stats().countries.JP!.getItems!.items).toBeGreaterThanOrEqual(10);
    } finally {
      p.sim.faults.update({ latencyMs: 0 });
      await events.close();
      eventsRedis.disconnect();
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
