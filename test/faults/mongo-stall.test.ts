import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from 'bullmq';
import { completions, type Pipeline, insertDue } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { asins, jobOutcomes, startPipelineBehindProxy, until, type TcpProxy } from './helpers.js';

/**
 * Injects: MongoDB black-holed while refresh jobs are in flight: a TCP proxy keeps every connection
 * open but forwards nothing (packets dropped without a reset, as a broken network or a frozen VM
 * does). The driver sets no socket timeout, so without a deadline of our own a job would wait for
 * ever while BullMQ keeps extending its lock.
 * Must hold: each batch's attempt fails with JobTimeoutError after WORKER_JOB_TIMEOUT (3 s here)
 * and is kept for a retry (none fails for good); /readyz answers 503 meanwhile; once traffic flows
 * again every batch completes and every product is written.
 * Measured: the failures seen by the worker and their error names, the jobs metric, products written.
 */
const JOB_TIMEOUT_MS = 3_000;
let proxy: TcpProxy;
let p: Pipeline;
let close: (() => Promise<void>) | undefined;
beforeAll(async () => {
  ({ p, proxy, close } = await startPipelineBehindProxy({ WORKER_JOB_TIMEOUT: `${JOB_TIMEOUT_MS}ms` }));
});
afterAll(async () => {
  await close?.();
});
const jobCount = (outcome: string): Promise<number> => jobOutcomes(p.ctx.metrics, outcome);

describe('MongoDB black-holed', () => {
  it('a job past WORKER_JOB_TIMEOUT fails as retryable and is done once traffic flows again', { timeout: 60_000 }, async () => {
    const list = asins('B0STALL', 30);
    const products = productModel(p.ctx.mongo);
    await insertDue(p.ctx.mongo, list);

    // Upstream answers take 500 ms: the three batches are at the upstream when the network goes.
    p.sim.faults.update({ latencyMs: 500 });
    const worker = p.workers.workers.get('JP')!;
    const failures: { name: string; ms: number }[] = [];
    const onFailed = (job: Job | undefined, err: Error): void => {
      failures.push({ name: err.name, ms: Date.now() - (job?.processedOn ?? Date.now()) });
    };
    worker.on('failed', onFailed);
    const active = new Promise<void>((resolve) => worker.once('active', () => resolve()));
    const allDone = completions(worker, 3, 55_000);
    expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBe(3);
    await active;
    proxy.stall();

    try {
      await until('three attempts timed out', async () => failures.filter((f) => f.name === 'JobTimeoutError').length >= 3, 20_000, 100);
      expect((await p.http.get('/readyz')).status).toBe(503);
      // Each attempt was given up at its deadline, not before and not much after.
      for (const f of failures.filter((x) => x.name === 'JobTimeoutError')) {
        expect(f.ms).toBeGreaterThanOrEqual(JOB_TIMEOUT_MS - 50);
        expect(f.ms).toBeLessThan(JOB_TIMEOUT_MS + 5_000);
      }
      expect(await jobCount('failed')).toBe(0);
      expect(await jobCount('completed')).toBe(0);
    } finally {
      proxy.restore();
    }

    const done = await allDone;
    worker.off('failed', onFailed);
    expect(done).toHaveLength(3);
    expect(await jobCount('failed')).toBe(0);
    expect(await products.countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: null })).toBe(0);
    await until('readyz 200 again by itself', async () => (await p.http.get('/readyz')).status === 200, 15_000, 200);
    p.sim.faults.update({ latencyMs: 0 });
  });
});
