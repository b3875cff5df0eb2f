import { DelayedError, UnrecoverableError as BullUnrecoverable, type Job } from 'bullmq';
import type { Country } from '../src/core/identifiers.js';
import { InvalidJobPayloadError, JobTimeoutError, PermitWaitTimeoutError, UpstreamRefusingError } from '../src/core/errors.js';
import type { UpstreamPort } from '../src/upstream/port.js';
import type { JobContext } from '../jobs/context.js';
import type { CountryJobKind } from '../jobs/kind.js';
import { isCountryJobName, kindOf, parseJob } from '../jobs/queues.js';
import { failureAction } from './failure.js';
import { runCutOff } from './cut-off.js';
import type { PermitScopes } from '../src/quota/permit-scope.js';
import { fairLane, type Fair } from '../src/fairness/fair-classes.js';

/** How soon a job that timed out waiting for its permit is back in its queue. */
const PERMIT_WAIT_RETRY_MS = 1_000;

/** Called when an upstream error means the country cannot be served until an operator acts. */
export type StopCountry = (country: Country, err: Error) => Promise<void>;

/** Puts the job back as delayed until `at`, without spending one of its attempts. */
async function delayUntil(job: Job, token: string | undefined, at: number): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}

/**
 * Runs one job of a country: parses its payload against its kind and runs the kind, under the
 * attempt's deadline. What a failure becomes is failureAction's decision (workers/failure.ts),
 * carried out here in terms BullMQ understands: a delay that spends no attempt, BullMQ's
 * UnrecoverableError (no retry), or the error itself (a retry with the kind's backoff).
 */
export function createProcessor(ctx: JobContext, country: Country, upstream: UpstreamPort, stopCountry: StopCountry, scopes: PermitScopes) {
  return async (job: Job, token?: string, cancel?: AbortSignal): Promise<unknown> => {
    const log = ctx.logger.child({ jobId: job.id, job: job.name, country, attempt: job.attemptsMade + 1 });
    let kind: CountryJobKind | undefined;
    let data: { country: Country } | undefined;
    try {
      if (!isCountryJobName(job.name)) throw new InvalidJobPayloadError(`unknown job name ${job.name}`);
      kind = kindOf(job.name);
      data = parseJob(job.name, job.data);
      const started = Date.now();
      const fair = (data as { fair?: Fair }).fair;
      // BullMQ keeps extending the lock of a job whose handler never settles (a MongoDB connection
      // black-holed by the network: the driver sets no socket timeout), so without a deadline the
      // job would hold its slot for ever and never be retried. Past it, or when the worker's drain
      // runs out of time, the attempt fails as retryable (workers/cut-off.ts).
      const ms = ctx.config.workers.jobTimeoutMs;
      const k = kind;
      const d = data;
      // The job asks its permits at its BullMQ priority (a fair class's: its tag over the lane's base),
      // or at 0 when its account had nothing queued, which the governor lets take the class's next
      // start out of turn (src/quota/governor-scripts.ts).
      const rank = fair?.fresh ? 0 : job.priority || kind.priority;
      const state = { waiting: false, started: false };
      const lane = fair ? { lane: fairLane(k.cls, country), tag: fair.tag } : undefined;
      const result = await runCutOff(
        (signal) => scopes.run({ cls: k.cls, rank, signal, fair: lane, state }, () => k.run(ctx, d, { id: job.id, upstream, log })),
        {
          ms,
          cancel,
          // Past its deadline while still waiting for a permit, the job is backlogged, not hung: it
          // goes back to its queue in its place (a 'wait', no attempt spent).
          onTimeout: () =>
            state.waiting
              ? new PermitWaitTimeoutError(
                  `job waited ${ms} ms for its permit (WORKER_JOB_TIMEOUT): back to its queue`,
                  PERMIT_WAIT_RETRY_MS,
                )
              : new JobTimeoutError(`job still running after ${ms} ms (WORKER_JOB_TIMEOUT)`),
        },
      );
      log.debug({ ms: Date.now() - started }, 'job done');
      return result;
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      const decided = failureAction(error, kind);
      switch (decided.action) {
        case 'fail_day_spent':
          ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'quota_day' });
          throw new BullUnrecoverable(error.message);
        case 'wait_next_day':
          ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'quota_day' });
          log.info(
            { until: new Date(decided.until).toISOString() },
            "the day's upstream quota is spent: the job waits for the next quota day",
          );
          if (kind && data && typeof kind.whenDaySpent === 'function') await kind.whenDaySpent(ctx, data, new Date(decided.until));
          return delayUntil(job, token, decided.until);
        case 'wait':
          // A refused country says so once, in its breaker's log line; its jobs only go back to wait.
          if (error instanceof UpstreamRefusingError)
            log.debug({ retryAfterMs: decided.ms }, 'the upstream refuses the country: the job waits');
          else log.warn({ retryAfterMs: decided.ms }, 'upstream throttled again and again: the job waits');
          ctx.metrics.jobs.inc({ country, name: job.name, outcome: 'rate_limited' });
          return delayUntil(job, token, Date.now() + decided.ms);
        case 'stop_country':
          await stopCountry(country, error);
          throw new BullUnrecoverable(error.message);
        case 'fail':
          log.warn({ err: { name: error.name, message: error.message } }, 'job failed for good');
          throw new BullUnrecoverable(error.message);
        case 'retry':
          log.warn({ err: { name: error.name, message: error.message } }, 'job failed; will retry');
          throw error;
      }
    }
  };
}
