import { DelayedError, UnrecoverableError as BullUnrecoverable, type Job } from 'bullmq';
import type { JobContext } from './context.js';
import { isJobName, parseJob, InvalidJobPayloadError, type JobName } from '../jobs/registry.js';
import { withTimeout } from '../src/db/mongo.js';
import { JobTimeoutError, RateLimitedError, UnrecoverableError } from '../src/errors/index.js';
import { UpstreamAuthError, UpstreamNotEligibleError } from '../src/upstream/errors.js';
import { DayQuotaSpentError } from '../src/quota/errors.js';
import type { Country } from '../src/catalog/identifiers.js';
import { refreshBatch } from './handlers/refresh.js';
import { resolveEan } from './handlers/ean-resolve.js';
import { crawlBrowsePage } from './handlers/browse-crawl.js';
import { noteQuotaWait } from './quota-wait.js';

function run(ctx: JobContext, name: JobName, job: Job): Promise<unknown> {
  switch (name) {
    case 'world.update':
      return refreshBatch(ctx, parseJob('world.update', job.data), name);
    case 'refresh.p1':
      return refreshBatch(ctx, parseJob('refresh.p1', job.data), name);
    case 'refresh.p0':
      return refreshBatch(ctx, parseJob('refresh.p0', job.data), name);
    case 'ean.resolve':
      return resolveEan(ctx, parseJob('ean.resolve', job.data));
    case 'browse.crawl':
      return crawlBrowsePage(ctx, parseJob('browse.crawl', job.data), job.id);
  }
}

/** Called when an upstream error means the country cannot be served until an operator acts. */
export type StopCountry = (country: Country, err: Error) => Promise<void>;

/** Puts the job back as delayed until `at`, without spending one of its attempts. */
async function delayUntil(job: Job, token: string | undefined, at: number): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}

/**
 * Runs one job: parses its payload against the registry and hands it to its handler. Errors leave
 * as what BullMQ understands:
 * - the day's quota spent (the governor refused a permit, or the upstream said so): a forced update
 *   fails at once (its client is told 429); an EAN page or a crawl page waits, delayed to the next
 *   quota day, and says so in its status; a scheduled refresh gives its products back to the
 *   planner (refresh handler) and never gets here;
 * - the upstream's 429 for the second, still there after the port's own tries: the job waits one
 *   retry-after as delayed, without using an attempt;
 * - our UnrecoverableError (bad payload, invalid request): BullMQ's, so the job fails without retry;
 *   credential and eligibility errors also stop the country's queues;
 * - anything else: a retry with backoff (jobs/retry.ts).
 */
export function createProcessor(ctx: JobContext, country: Country, stopCountry: StopCountry) {
  return async (job: Job, token?: string): Promise<unknown> => {
    const log = ctx.logger.child({ jobId: job.id, job: job.name, country, attempt: job.attemptsMade + 1 });
    try {
      if (!isJobName(job.name)) throw new InvalidJobPayloadError(`unknown job name ${job.name}`);
      const started = Date.now();
      // The job's deadline. BullMQ keeps extending the lock of a job whose handler never settles (a
      // MongoDB connection black-holed by the network: the driver sets no socket timeout), so
      // without one the job would hold its slot for ever and never be retried. Past it the attempt
      // fails as retryable; the hung handler may still finish later, which is harmless because
      // every handler write is an idempotent upsert or a conditional update.
      const ms = ctx.workers.jobTimeoutMs;
      const result = await withTimeout(run(ctx, job.name, job), ms, 'job',
        () => new JobTimeoutError(`job still running after ${ms} ms (WORKER_JOB_TIMEOUT)`));
      log.debug({ ms: Date.now() - started }, 'job done');
      return result;
    } catch (err) {
      if (err instanceof DayQuotaSpentError) {
        ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'quota_day' });
        if (job.name === 'world.update') throw new BullUnrecoverable(`${err.name}: ${err.message}`);
        log.info({ until: new Date(err.retryAt).toISOString() }, 'the day\'s upstream quota is spent: the job waits for the next quota day');
        await noteQuotaWait(ctx, job, err.retryAt);
        return delayUntil(job, token, err.retryAt);
      }
      if (err instanceof RateLimitedError) {
        log.warn({ retryAfterMs: err.retryAfterMs }, 'upstream throttled again and again: the job waits');
        ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'rate_limited' });
        return delayUntil(job, token, Date.now() + Math.max(1, err.retryAfterMs));
      }
      if (err instanceof UpstreamAuthError || err instanceof UpstreamNotEligibleError) {
        await stopCountry(country, err);
        throw new BullUnrecoverable(err.message);
      }
      if (err instanceof UnrecoverableError || err instanceof InvalidJobPayloadError) {
        log.warn({ err: { name: err.name, message: err.message } }, 'job failed for good');
        throw new BullUnrecoverable(`${err.name}: ${err.message}`);
      }
      log.warn({ err: { name: (err as Error).name, message: (err as Error).message } }, 'job failed; will retry');
      throw err;
    }
  };
}
