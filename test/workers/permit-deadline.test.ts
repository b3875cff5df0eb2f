import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asins, completions, insertDue, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { planCountry } from '../../src/scheduling/planner.js';

/**
 * A job whose deadline (WORKER_JOB_TIMEOUT) passes while its call waits for a permit stops waiting:
 * it goes back to its queue without spending an attempt (its class is backlogged, not hung), and
 * the abandoned wait makes no call of its own later, so a batch costs one call, not two.
 */
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({ WORKER_JOB_TIMEOUT: '1s' });
});
afterAll(async () => {
  await p?.close();
});

describe('the job deadline and the permit wait', () => {
  it('a job past its deadline while waiting for its permit makes no call later', async () => {
    const worker = p.workers.workers.get('JP')!;
    const calls = () => p.sim.stats().countries.JP?.getItems?.calls ?? 0;
    const before = calls();
    // No start for 2.5 s: the first attempt's deadline (1 s) passes while it waits.
    await p.ctx.quota.hold('JP', 2_500);
    const failures: Error[] = [];
    const onFailed = (_job: Job | undefined, err: Error): void => void failures.push(err);
    worker.on('failed', onFailed);
    const done = completions(worker, 1, 20_000);
    await insertDue(p.ctx.mongo, asins('B0PDLN', 10));
    expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBe(1);
    const [job] = await done;
    worker.off('failed', onFailed);
    // Its first run outlived its deadline waiting (1 s against the 2.5 s hold), and was not a failure.
    expect(job!.finishedOn! - job!.timestamp).toBeGreaterThan(2_000);
    expect(failures).toEqual([]);
    // The retry made the batch's one call; the abandoned attempt, ahead of it in the permit line,
    // would have made its own as soon as the hold ended, before the retry's.
    expect(calls() - before).toBe(1);
  });
});
