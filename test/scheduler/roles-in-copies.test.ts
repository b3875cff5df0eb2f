import mongoose from 'mongoose';
import type { ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { asins, insertDue, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { mongoUriFor, testEnv } from '../helpers/context.js';
import { exitOf, spawnCli, waitForLog } from '../helpers/cli.js';
import { until } from '../helpers/until.js';
import { productModel } from '../../src/models/product.js';

/**
 * Every role in two copies, as separate processes: two schedulers ticking every second on the same
 * due products, and two workers, each pinned to one country (WORKER_COUNTRIES). Must hold: every
 * product is planned and refreshed exactly once, and each country's jobs run only in its worker.
 */
let p: Pipeline;
const children: ChildProcess[] = [];
beforeAll(async () => {
  p = await startPipeline({ COUNTRIES: 'JP,US' });
  // The in-process workers would take jobs of both countries: only the children serve here.
  await p.workers.close();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  await Promise.all(children.map((c) => exitOf(c)));
  await p?.close();
});

function spawnRole(role: 'scheduler' | 'worker', extra: Record<string, string> = {}): ChildProcess {
  const child = spawnCli(
    [role],
    testEnv({
      MONGODB_URI: mongoUriFor(p.ctx.mongo.name),
      REDIS_PREFIX: p.ctx.redisPrefix,
      COUNTRIES: 'JP,US',
      SIMULATOR_URL: p.sim.url,
      QUOTA_RPS: '50',
      QUOTA_PER_DAY: '100000000',
      SCHEDULER_REFRESH_CRON: '* * * * * *',
      SCHEDULER_BROWSE_CRON: '0 0 1 1 *',
      SCHEDULER_COALESCE: '0',
      ...extra,
    }),
  );
  children.push(child);
  return child;
}

it('two schedulers plan each due product once; workers pinned by WORKER_COUNTRIES run only their country', async () => {
  const per = 300;
  const lists = {
    JP: await insertDue(p.ctx.mongo, asins('B0CPJP', per), { country: 'JP' }),
    US: await insertDue(p.ctx.mongo, asins('B0CPUS', per), { country: 'US' }),
  };
  const workers = { JP: spawnRole('worker', { WORKER_COUNTRIES: 'JP' }), US: spawnRole('worker', { WORKER_COUNTRIES: 'US' }) };
  const started = await Promise.all((['JP', 'US'] as const).map((c) => waitForLog(workers[c], (l) => l.msg === 'workers started')));
  expect(started.map((l) => l.countries)).toEqual([['JP'], ['US']]);
  const schedulers = [spawnRole('scheduler'), spawnRole('scheduler')];
  await Promise.all(schedulers.map((s) => waitForLog(s, (l) => l.msg === 'scheduler started')));

  const products = productModel(p.ctx.mongo);
  const all = [...lists.JP, ...lists.US];
  await until(
    'every product refreshed',
    async () => (await products.countDocuments({ asin: mongoose.trusted({ $in: all }), last_attempt_at: null })) === 0,
    90_000,
    200,
  );
  for (const country of ['JP', 'US'] as const) {
    const queue = p.ctx.jobs.queue(country);
    await until('the queue drained', async () => (await queue.count()) + (await queue.getActiveCount()) === 0, 30_000, 100);
    const done = await queue.getJobs(['completed'], 0, -1);
    const refreshed = done.flatMap((j) => (j.data as { asins: string[] }).asins);
    // Exactly once: every ASIN in one completed batch, none twice, whichever scheduler planned it.
    expect(refreshed.sort()).toEqual([...lists[country]].sort());
    // Run by the worker pinned to the country, and by no other process.
    const by = [...new Set(done.map((j) => j.processedBy))];
    expect(by).toEqual([`${hostname()}:${workers[country].pid}`]);
  }
});
