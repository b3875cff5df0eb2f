import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completions, type Pipeline, insertDue } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { asins, jobOutcomes, startPipelineBehindProxy, until, type TcpProxy } from './helpers.js';

/**
 * Injects: MongoDB unreachable for 12 s while refresh jobs are in flight (a TCP proxy between the
 * app and the MongoDB server drops every connection and refuses new ones; the server keeps its
 * data). 12 s rather than 10: the driver waits up to 10 s (serverSelectionTimeoutMS) for a server
 * before failing an operation, so a 10 s cut could be bridged by that wait alone.
 * Must hold: /readyz answers 503 naming MongoDB, then 200 by itself; routes answer 503, not 500;
 * each batch's write fails and the job is retried with backoff (no job fails for good); after the
 * outage every batch completes and every product is written.
 * Measured: the jobs metric (retry / failed / completed counts), products written, probe answers.
 */
let proxy: TcpProxy;
let p: Pipeline;
let close: (() => Promise<void>) | undefined;
beforeAll(async () => {
  ({ p, proxy, close } = await startPipelineBehindProxy());
});
afterAll(async () => {
  await close?.();
});
const jobCount = (outcome: string): Promise<number> => jobOutcomes(p.ctx.metrics, outcome);

describe('MongoDB unreachable', () => {
  it('jobs fail and retry with backoff, none is lost; readyz 503 then 200', { timeout: 60_000 }, async () => {
    const list = asins('B0MONGO', 60);
    const products = productModel(p.ctx.mongo);
    await insertDue(p.ctx.mongo, list);
    expect((await p.http.get('/readyz')).status).toBe(200);

    // Upstream answers take 500 ms: the six batches are at the upstream when MongoDB goes.
    p.sim.faults.update({ latencyMs: 500 });
    const worker = p.workers.workers.get('JP')!;
    const active = new Promise<void>((resolve) => worker.once('active', () => resolve()));
    const allDone = completions(worker, 6, 55_000);
    const plan = await planCountry(p.planner, 'JP');
    expect(plan.enqueued.batches).toBe(6);
    await active;
    proxy.cut();
    const cutAt = Date.now();

    const ready = await p.http.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.checks.mongodb).not.toBe('ok');
    expect(ready.body.checks.redis).toBe('ok');
    const list503 = await p.http.get('/api/user');
    expect(list503.status).toBe(503);
    expect(list503.headers['retry-after']).toBeDefined();
    expect(list503.body).toEqual({ message: expect.any(String) });

    // Every batch fails at least once while MongoDB is away, and is kept for a retry.
    await until('each batch failed and was kept for retry', async () => (await jobCount('retry')) >= 6, 13_000, 200);
    expect(await jobCount('failed')).toBe(0);
    expect(await jobCount('completed')).toBe(0);
    const delayed = await p.ctx.jobs.queue('JP').getJobCounts('delayed', 'failed');
    expect(delayed.failed).toBe(0);

    await until('12 s of outage', async () => Date.now() - cutAt >= 12_000, 13_000, 100);
    expect(proxy.refused).toBeGreaterThan(0);
    proxy.restore();
    await until('readyz 200 again by itself', async () => (await p.http.get('/readyz')).status === 200, 15_000, 200);

    const done = await allDone;
    expect(done).toHaveLength(6);
    expect(done.every((j) => j.attemptsMade >= 1)).toBe(true);
    expect(await jobCount('failed')).toBe(0);
    expect(await products.countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: null })).toBe(0);
    expect(await products.countDocuments({ asin: mongoose.trusted({ $in: list }), status: 'pending' })).toBe(0);
    p.sim.faults.update({ latencyMs: 0 });
  });
});
