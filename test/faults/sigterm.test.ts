import type { ChildProcess } from 'node:child_process';
import mongoose from 'mongoose';
import { QueueEvents, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPipeline, type Pipeline, insertDue } from '../helpers/pipeline.js';
import { testEnv, mongoUriFor } from '../helpers/context.js';
import { exitOf, spawnCli, waitForLog } from '../helpers/cli.js';
import { productModel } from '../../src/models/product.js';
import { watchModel } from '../../src/models/watch.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { queueName, queuePrefix } from '../../jobs/queue-names.js';
import { loadConfig } from '../../config/env.js';
import { createUpstream, createUpstreamShared } from '../../src/upstream/factory.js';
import { asins, until } from './helpers.js';
import { sharedTag } from '../../src/db/redis-keys.js';
import { connectTestRedis } from '../helpers/test-redis.js';

/**
 * Injects: SIGTERM to each role (api, worker, scheduler, simulator, all) as a child process while it
 * is busy. Must hold: exit code 0, which the program gives only when its drain finished before
 * SHUTDOWN_TIMEOUT_MS (past the deadline it exits 1), with "shutdown complete" logged; and nothing
 * half-written: every watch has its products, every batch is written whole or not at all, every
 * claimed product is in a queued job, no job is left active, no scheduler lock is left held, every
 * upstream call in flight is answered. Measured with counts in MongoDB, Redis and the answers.
 */
const SHUTDOWN_MS = 8_000;
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({ QUOTA_RPS: '20', SIMULATOR_QUOTA_RPS: '20' });
  // Children do the work in this file; the in-process workers would take their jobs.
  await p.workers.close();
});
afterAll(async () => {
  await p?.close();
});

const products = () => productModel(p.ctx.mongo);
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const uri = mongoUriFor(p.ctx.mongo.name);
  return testEnv({
    MONGODB_URI: uri,
    REDIS_PREFIX: p.ctx.redisPrefix,
    COUNTRIES: 'JP',
    PORT: '0',
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_MS),
    WORKER_SHUTDOWN_MS: '5s',
    QUOTA_RPS: '20',
    ...extra,
  });
}

/** SIGTERM, then the exit; 'shutdown complete' must be logged on the way. */
async function terminate(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const complete = waitForLog(child, (l) => l.msg === 'shutdown complete', SHUTDOWN_MS + 2_000).then(
    () => true,
    () => false,
  );
  child.kill('SIGTERM');
  const exit = await exitOf(child);
  expect(await complete).toBe(true);
  return exit;
}

/** Products of earlier tests are taken off the schedule, so each test plans only its own. */
async function offSchedule(): Promise<void> {
  await products().updateMany({}, { $set: { next_refresh_at: null } });
}

async function noneActive(): Promise<void> {
  expect((await p.ctx.jobs.queue('JP').getJobCounts('active')).active).toBe(0);
}

describe('SIGTERM to every role under load', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  it('api: requests in flight are answered, exit 0, every accepted watch is whole', { timeout: 30_000 }, async () => {
    const child = spawnCli(['api'], childEnv());
    children.push(child);
    const url = String((await waitForLog(child, (l) => l.msg === 'api listening')).url);
    const { token } = await p.ctx.users.create({ name: 'Term', email: 'term@example.com' });
    const list = asins('B0TAPI', 60);
    let first: () => void = () => undefined;
    const firstAnswer = new Promise<void>((r) => (first = r));
    const answers = list.map((asin) =>
      fetch(`${url}/api/watch/asin`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ asin, priority: 1 }),
      }).then(
        async (res) => {
          first();
          return { asin, status: res.status, body: (await res.json()) as unknown };
        },
        () => ({ asin, status: 0, body: null }),
      ),
    );
    await firstAnswer;
    const exit = await terminate(child);
    const results = await Promise.all(answers);
    expect(exit).toEqual({ code: 0, signal: null });
    const accepted = results.filter((r) => r.status === 201).map((r) => r.asin);
    expect(accepted.length).toBeGreaterThan(0);
    // Every answer is an answer or a refused connection, never a 5xx.
    expect(results.every((r) => r.status === 0 || r.status === 201)).toBe(true);
    const user = await p.ctx.users.findByToken(token);
    const watched = await watchModel(p.ctx.mongo).find({ user_id: user!._id, kind: 'asin' }).lean();
    // Whole: exactly the accepted watches are stored, each with its product.
    expect(new Set(watched.map((w) => w.key))).toEqual(new Set(accepted));
    expect(await products().countDocuments({ asin: mongoose.trusted({ $in: accepted }), country: 'JP', priority: 1 })).toBe(
      accepted.length,
    );
  });

  it(
    'api: a forced update waiting for its job is answered at once (202, the job stays queued), exit 0 within the deadline',
    { timeout: 30_000 },
    async () => {
      // No worker takes forced updates in this file, and UPDATE_WAIT is far past the deadline: the
      // request would hold the drain open unless shutdown ends its wait.
      const child = spawnCli(['api'], childEnv({ UPDATE_WAIT: '60s' }));
      children.push(child);
      const url = String((await waitForLog(child, (l) => l.msg === 'api listening')).url);
      const { token } = await p.ctx.users.create({ name: 'Waiter', email: 'waiter@example.com' });
      const updates = p.ctx.jobs.queue('JP', 'forced');
      const before = (await updates.getJobCounts('wait', 'prioritized')) as Record<string, number>;
      const answer = fetch(`${url}/api/world/update?asin=B0TWAIT001&country=JP`, { headers: { Authorization: `Bearer ${token}` } }).then(
        async (res) => ({ status: res.status, body: (await res.json()) as { job?: { id: string } } }),
      );
      await until(
        'the forced update queued',
        async () => {
          const now = (await updates.getJobCounts('wait', 'prioritized')) as Record<string, number>;
          return (now.wait ?? 0) + (now.prioritized ?? 0) > (before.wait ?? 0) + (before.prioritized ?? 0);
        },
        10_000,
      );
      const started = Date.now();
      const exit = await terminate(child);
      const res = await answer;
      expect(exit).toEqual({ code: 0, signal: null });
      expect(Date.now() - started).toBeLessThan(SHUTDOWN_MS);
      expect(res.status).toBe(202);
      expect(await updates.getJob(res.body.job!.id)).toBeDefined();
    },
  );

  it(
    'worker: the batches in flight finish, the rest wait; exit 0; each batch written whole or not at all',
    { timeout: 30_000 },
    async () => {
      p.sim.faults.update({ latencyMs: 800 });
      await offSchedule();
      const list = asins('B0TWRK', 100);
      await insertDue(p.ctx.mongo, list);
      expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBe(10);
      const eventsRedis = connectTestRedis('events');
      const events = new QueueEvents(queueName('JP'), {
        connection: eventsRedis,
        prefix: queuePrefix(p.ctx.redisPrefix, 'JP'),
      });
      await events.waitUntilReady();
      const child = spawnCli(['worker'], childEnv({ SIMULATOR_URL: p.sim.url, WORKER_CONCURRENCY: '4' }));
      children.push(child);
      try {
        const firstDone = new Promise<void>((r) => events.once('completed', () => r()));
        await firstDone;
        const exit = await terminate(child);
        expect(exit).toEqual({ code: 0, signal: null });
        await noneActive();
        const queue = p.ctx.jobs.queue('JP');
        const completed = (await queue.getJobs(['completed'])) as Job[];
        const waiting = (await queue.getJobs(['wait', 'prioritized', 'delayed'])) as Job[];
        expect(completed.length + waiting.length).toBe(10);
        expect(waiting.length).toBeGreaterThan(0);
        for (const job of completed) {
          const a = (job.data as { asins: string[] }).asins;
          expect(await products().countDocuments({ asin: mongoose.trusted({ $in: a }), last_attempt_at: null })).toBe(0);
        }
        for (const job of waiting) {
          const a = (job.data as { asins: string[] }).asins;
          expect(
            await products().countDocuments({ asin: mongoose.trusted({ $in: a }), last_attempt_at: mongoose.trusted({ $ne: null }) }),
          ).toBe(0);
        }
        await queue.drain();
      } finally {
        p.sim.faults.update({ latencyMs: 0 });
        await events.close();
        eventsRedis.disconnect();
      }
    },
  );

  it(
    'scheduler: the plan in progress finishes; exit 0; every claimed product is in a queued job, the lock is released',
    { timeout: 30_000 },
    async () => {
      await offSchedule();
      const list = asins('B0TSCH', 300);
      await insertDue(p.ctx.mongo, list, { priority: 0 });
      const child = spawnCli(['scheduler'], childEnv({ SCHEDULER_REFRESH_CRON: '* * * * * *' }));
      children.push(child);
      // The scheduler plans at start; the signal comes while it does.
      await waitForLog(child, (l) => l.msg === 'scheduler started');
      const exit = await terminate(child);
      expect(exit).toEqual({ code: 0, signal: null });
      const jobs = (await p.ctx.jobs.queue('JP').getJobs(['wait', 'prioritized'])) as Job[];
      const queued = jobs.flatMap((j) => (j.data as { asins: string[] }).asins).filter((a) => a.startsWith('B0TSCH'));
      const claimed = await products()
        .find({ asin: mongoose.trusted({ $in: list }), plan_token: mongoose.trusted({ $ne: null }) })
        .select({ asin: 1 })
        .lean();
      expect(new Set(queued).size).toBe(queued.length);
      expect(new Set(queued)).toEqual(new Set(claimed.map((c) => c.asin)));
      expect(await p.ctx.redis.get(`${sharedTag(p.ctx.redisPrefix, 'locks')}:plan`)).toBeNull();
      await p.ctx.jobs.queue('JP').drain();
    },
  );

  it('simulator: calls in flight are answered, exit 0', { timeout: 30_000 }, async () => {
    const child = spawnCli(['simulator'], childEnv({ SIMULATOR_FAULTS: JSON.stringify({ latencyMs: 1_500 }), SIMULATOR_QUOTA_RPS: '50' }));
    children.push(child);
    const url = String((await waitForLog(child, (l) => l.msg === 'upstream simulator listening')).url);
    const shared = createUpstreamShared();
    try {
      const port = createUpstream(loadConfig(childEnv()), 'JP', { simulatorUrl: url, shared });
      const calls = [0, 1, 2, 3, 4].map((i) =>
        port.getItems(asins(`B0SIM${i}`, 10)).then(
          () => 'ok',
          (e: Error) => e.message,
        ),
      );
      await until(
        'five calls at the simulator',
        async () => {
          const stats = (await (await fetch(`${url}/__stats`)).json()) as { countries: { JP?: { getItems?: { calls: number } } } };
          return (stats.countries.JP?.getItems?.calls ?? 0) >= 5;
        },
        10_000,
        50,
      );
      const exit = await terminate(child);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(await Promise.all(calls)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    } finally {
      await shared.close();
    }
  });

  it('all: api, scheduler, workers and simulator busy together; exit 0; nothing half-written', { timeout: 40_000 }, async () => {
    await offSchedule();
    const child = spawnCli(
      ['all'],
      childEnv({
        SIMULATOR_FAULTS: JSON.stringify({ latencyMs: 500 }),
        SIMULATOR_QUOTA_RPS: '20',
        SCHEDULER_REFRESH_CRON: '* * * * * *',
      }),
    );
    children.push(child);
    const url = String((await waitForLog(child, (l) => l.msg === 'api listening', 25_000)).url);
    const { token } = await p.ctx.users.create({ name: 'All', email: 'all@example.com' });
    const list = asins('B0TALL', 40);
    for (const asin of list) {
      const res = await fetch(`${url}/api/watch/asin`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ asin, priority: 1 }),
      });
      expect(res.status).toBe(201);
    }
    await until(
      'work under way',
      async () =>
        (await products().countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: mongoose.trusted({ $ne: null }) })) > 0,
      20_000,
      100,
    );
    const exit = await terminate(child);
    expect(exit).toEqual({ code: 0, signal: null });
    await noneActive();
    expect(await p.ctx.redis.get(`${sharedTag(p.ctx.redisPrefix, 'locks')}:plan`)).toBeNull();
    // Every product is either untouched or written whole (a status from the upstream, a next refresh).
    const docs = await products()
      .find({ asin: mongoose.trusted({ $in: list }) })
      .lean();
    expect(docs).toHaveLength(40);
    for (const d of docs) {
      if (d.last_attempt_at === null) expect(d.status).toBe('pending');
      else {
        expect(d.status).not.toBe('pending');
        expect(d.next_refresh_at!.getTime()).toBeGreaterThan(d.last_attempt_at.getTime());
      }
    }
  });
});
