import { QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPipeline, insertDue, asins, type Pipeline } from '../helpers/pipeline.js';
import { mongoUriFor, testEnv } from '../helpers/context.js';
import { exitOf, spawnCli, waitForLog } from '../helpers/cli.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { changeOf } from '../helpers/deliveries.js';
import { queueName, queuePrefix } from '../../jobs/queue-names.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { connectTestRedis } from '../helpers/test-redis.js';

/**
 * Injects: work slower than the shutdown deadline in two kinds of worker of one process (a refresh
 * whose upstream answers after 6 s, a webhook whose receiver answers after 6 s), then SIGTERM. Must
 * hold: every worker stops taking jobs at once and all drain against one WORKER_SHUTDOWN_MS, so the
 * process exits 0 within SHUTDOWN_TIMEOUT_MS (draining one after the other would take twice the
 * drain, past the deadline, and exit 1). And a job whose deadline passes while it waits for its
 * permit stops waiting: it makes no call later.
 */
let p: Pipeline;
let receiver: WebhookReceiver;
beforeAll(async () => {
  p = await startPipeline({ ENDPOINT_ALLOW_PRIVATE: 'true', QUOTA_RPS: '20', SIMULATOR_QUOTA_RPS: '20' });
  // The child process does the work here.
  await p.workers.close();
  receiver = await new WebhookReceiver().start();
});
afterAll(async () => {
  p?.sim.faults.update({ latencyMs: 0 });
  await receiver?.close();
  await p?.close();
});

describe('shutdown of a worker process', () => {
  it(
    'drains a slow refresh and a slow webhook in parallel under one deadline: exit 0 within SHUTDOWN_TIMEOUT_MS',
    { timeout: 40_000 },
    async () => {
      const u = await p.user('drain@example.com');
      await p.http
        .post('/api/alerts')
        .set(u.headers)
        .send({ asin: 'B0DRAIN001', country: 'JP', kind: 'any_change', webhook_url: `${receiver.url}/slow` })
        .expect(201);
      receiver.delay('/slow', 6_000);
      p.sim.faults.update({ latencyMs: 6_000 });
      const child = spawnCli(
        ['worker'],
        testEnv({
          MONGODB_URI: mongoUriFor(p.ctx.mongo.name),
          REDIS_PREFIX: p.ctx.redisPrefix,
          COUNTRIES: 'JP',
          SIMULATOR_URL: p.sim.url,
          QUOTA_RPS: '20',
          ENDPOINT_ALLOW_PRIVATE: 'true',
          WORKER_SHUTDOWN_MS: '3s',
          SHUTDOWN_TIMEOUT_MS: '5000',
        }),
      );
      const eventsRedis = connectTestRedis('events');
      const events = new QueueEvents(queueName('JP', 'refresh'), {
        connection: eventsRedis,
        prefix: queuePrefix(p.ctx.redisPrefix, 'JP'),
      });
      try {
        await waitForLog(child, (l) => l.msg === 'ready');
        await events.waitUntilReady();
        const refreshing = new Promise<void>((resolve) => events.once('active', () => resolve()));
        await insertDue(p.ctx.mongo, asins('B0DRNREF', 10));
        expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBeGreaterThanOrEqual(1);
        const webhook = receiver.waitFor('/slow', 1);
        await p.ctx.deliveries.enqueueFor([changeOf('B0DRAIN001', { price: 1_000 }, { price: 900 })]);
        await Promise.all([refreshing, webhook]);

        const complete = waitForLog(child, (l) => l.msg === 'shutdown complete', 10_000).then(
          () => true,
          () => false,
        );
        const started = Date.now();
        child.kill('SIGTERM');
        expect(await exitOf(child)).toEqual({ code: 0, signal: null });
        const took = Date.now() - started;
        expect(await complete).toBe(true);
        // One deadline for both (3 s), well short of two in a row (6 s) and of the process's 5 s.
        expect(took).toBeGreaterThanOrEqual(2_900);
        expect(took).toBeLessThan(5_000);
      } finally {
        p.sim.faults.update({ latencyMs: 0 });
        await events.close();
        eventsRedis.disconnect();
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    },
  );
});
