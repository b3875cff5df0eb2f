import { UnrecoverableError as BullUnrecoverable, Worker, type Job } from 'bullmq';
import type { z } from 'zod';
import type { Config } from '../config/env.js';
import type { Redis } from '../src/db/redis.js';
import type { Logger } from '../src/logger.js';
import { withTimeout } from '../src/db/mongo.js';
import { JobTimeoutError } from '../src/core/errors.js';
import { parsePayload } from '../jobs/queues.js';
import type { GlobalJobKind } from '../jobs/kind.js';
import { globalQueuePrefix } from '../jobs/queue-names.js';
import { runCutOff } from '../jobs/cut-off.js';
import { once } from '../src/lifecycle/once.js';
import { readyOf } from './ready.js';

export interface RunningGlobalWorker {
  readonly worker: Worker;
  close(): Promise<void>;
}

/** What a global kind's worker needs besides the kind's own dependencies. */
export interface GlobalWorkerDeps {
  readonly config: Pick<Config, 'alerts'>;
  readonly logger: Logger;
  readonly redisPrefix: string;
  readonly shutdownMs: number;
}

/**
 * The worker of a global kind's queue (deliveries): the kind's concurrency per process, retried on
 * the kind's backoff. Its jobs call no upstream, so none of the country processor's permits, quota
 * days or country pauses apply; each attempt parses its payload against the kind, as the producer
 * did, and runs under the attempt's bound. On shutdown it lets attempts in flight finish within the
 * deadline, then closes; an attempt cut off is retried.
 */
export async function startGlobalWorker<S extends z.ZodType, D>(
  kind: GlobalJobKind<string, S, D>,
  deps: D & GlobalWorkerDeps,
  connection: Redis,
): Promise<RunningGlobalWorker> {
  const settings = kind.worker(deps.config);
  const attemptMs = settings.attemptMs;
  const run = async (job: Job): Promise<unknown> => {
    let data: z.output<S>;
    try {
      data = parsePayload(kind, job.data);
    } catch (err) {
      // Data no retry can change.
      throw new BullUnrecoverable((err as Error).message);
    }
    return kind.run(deps, data, { id: job.id!, attempt: job.attemptsMade + 1, attempts: job.opts.attempts ?? 1 });
  };
  const worker = new Worker(
    kind.queue,
    (job, _token, cancel) =>
      runCutOff(() => run(job), {
        ms: attemptMs,
        cancel,
        onTimeout: () => new JobTimeoutError(`${kind.noun} attempt still running after ${attemptMs} ms`),
      }),
    {
      connection,
      prefix: globalQueuePrefix(deps.redisPrefix, kind.queue),
      concurrency: settings.concurrency,
      settings: { backoffStrategy: settings.backoff },
      autorun: false,
    },
  );
  worker.on('error', (err) => deps.logger.warn({ queue: kind.queue, err: { message: err.message } }, 'worker error'));
  worker.on('failed', (job: Job | undefined, err: Error) => {
    if (!job || !kind.onFinalFailure || !(err instanceof BullUnrecoverable || job.attemptsMade >= (job.opts.attempts ?? 1))) return;
    void kind.onFinalFailure(deps, { id: job.id, data: job.data }, err).catch(() => undefined);
  });
  const ready = readyOf(worker);
  void worker.run();
  await ready;
  const close = once(async () => {
    try {
      await withTimeout(worker.close(), deps.shutdownMs, `${kind.queue} drain`);
    } catch {
      deps.logger.warn({ queue: kind.queue }, 'jobs did not finish in time: closing anyway (they will be retried)');
      await worker.close(true);
    }
  });
  return { worker, close };
}
