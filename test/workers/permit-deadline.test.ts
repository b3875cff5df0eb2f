import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asins, completions, insertDue, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { planCountry } from '../../jobs/planner.js';

/**
 * A job whose deadline (WORKER_JOB_TIMEOUT) passes while its call waits for a permit stops waiting:
 * the attempt fails and is retried, and the abandoned attempt makes no call of its own later, so a
 * batch costs one call, not two.
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
    const failed = new Promise<Error>((resolve) => worker.once('failed', (_job: Job | undefined, err: Error) => resolve(err)));
    const done = completions(worker, 1, 20_000);
    await insertDue(p.ctx.mongo, asins('B0PDLN', 10));
    expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBe(1);
    expect((await failed).name).toBe('JobTimeoutError');
    const [job] = await done;
    expect(job!.attemptsMade).toBeGreaterThanOrEqual(1);
    // The retry made the batch's one call; the abandoned attempt, ahead of it in the permit line,
    // would have made its own as soon as the hold ended, before the retry's.
    expect(calls() - before).toBe(1);
  });
});
