import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asins, completions, startPipeline, type Pipeline, insertDue } from '../helpers/pipeline.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { productModel } from '../../src/models/product.js';

let p: Pipeline;
beforeAll(async () => {
  // The limiter and the simulator's quota agree (5 a second), as they do against the real service.
  p = await startPipeline({ QUOTA_RPS: '5', SIMULATOR_QUOTA_RPS: '5' });
});
afterAll(async () => {
  await p?.close();
});

async function due(prefix: string, n: number): Promise<void> {
  await insertDue(p.ctx.mongo, asins(prefix, n), { priority: 0 });
}

describe('quota and throttling', () => {
  it('the limiter keeps the workers within the quota: no 429 from the simulator', async () => {
    await due('B0LIMIT', 120);
    // Listen before planning: the first job may be done before planCountry returns.
    const done = completions(p.workers.workers.get('JP')!, 12);
    const plan = await planCountry(p.planner, 'JP');
    expect(plan.enqueued.batches).toBe(12);
    await done;
    const jp = p.sim.stats().countries.JP!;
    expect(jp.getItems!.calls).toBeGreaterThanOrEqual(12);
    expect(jp.getItems!.throttled).toBe(0);
  });

  it('a 429 burst from the upstream holds the pace, each call is tried again, every job completes without failing', async () => {
    const before = p.sim.stats().countries.JP?.getItems?.throttled ?? 0;
    p.sim.faults.update({ throttleBurst: 3 });
    await due('B0BURST', 30);
    const failed: string[] = [];
    const worker = p.workers.workers.get('JP')!;
    const onFailed = (job: { id?: string } | undefined): void => void failed.push(String(job?.id));
    worker.on('failed', onFailed);
    const done = completions(worker, 3);
    await planCountry(p.planner, 'JP');
    await done;
    worker.off('failed', onFailed);
    expect(p.sim.stats().countries.JP!.getItems!.throttled - before).toBe(3);
    expect(failed).toEqual([]);
    const metric = await p.ctx.metrics.upstreamCalls.get();
    expect(metric.values.filter((v) => v.labels.result === 'throttled').reduce((n, v) => n + v.value, 0)).toBe(3);
    expect(await productModel(p.ctx.mongo).countDocuments({ asin: mongoose.trusted({ $regex: '^B0BURST' }), status: 'pending' })).toBe(0);
  });
});
