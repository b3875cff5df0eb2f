import { UnrecoverableError as BullUnrecoverable, Worker, type Job } from 'bullmq';
import type { Redis } from '../src/db/redis.js';
import { DELIVERIES_QUEUE, deliveriesPrefix, webhookBackoff } from '../src/alerts/delivery-queue.js';
import { runDelivery, type DeliveryDeps } from '../jobs/deliver.js';
import { withTimeout } from '../src/db/mongo.js';
import { DELIVERY_DB_TIMEOUT_MS } from '../config/alerts.js';
import { JobTimeoutError } from '../src/core/errors.js';
import { runCutOff } from './cut-off.js';
import { once } from '../src/lifecycle/once.js';
import { readyOf } from './ready.js';

export interface RunningDeliveries {
  readonly worker: Worker;
  close(): Promise<void>;
}

/**
 * The worker of the deliveries queue: DELIVERY_CONCURRENCY attempts at once per process (each
 * mostly waits on a receiver), retried on DELIVERY_RETRY_SCHEDULE by BullMQ's custom backoff. On
 * shutdown it lets attempts in flight finish within the deadline (each is bounded by
 * DELIVERY_TIMEOUT), then closes; an attempt cut off is retried.
 */
export async function startDeliveryWorker(
  deps: DeliveryDeps & { readonly redisPrefix: string; readonly shutdownMs: number },
  connection: Redis,
): Promise<RunningDeliveries> {
  // An attempt is bounded by DELIVERY_TIMEOUT and MongoDB's own timeouts; the cut-off only matters
  // when the drain runs out of time (BullMQ's cancel signal), so it gets the attempt's bound as deadline.
  const attemptMs = deps.config.alerts.timeoutMs + 2 * DELIVERY_DB_TIMEOUT_MS + 5_000;
  const worker = new Worker(
    DELIVERIES_QUEUE,
    (job, _token, cancel) =>
      runCutOff(() => runDelivery(deps, job), {
        ms: attemptMs,
        cancel,
        onTimeout: () => new JobTimeoutError(`delivery attempt still running after ${attemptMs} ms`),
      }),
    {
      connection,
      prefix: deliveriesPrefix(deps.redisPrefix),
      concurrency: deps.config.alerts.concurrency,
      settings: { backoffStrategy: webhookBackoff(deps.config.alerts.retryScheduleMs) },
      autorun: false,
    },
  );
  worker.on('error', (err) => deps.logger.warn({ queue: DELIVERIES_QUEUE, err: { message: err.message } }, 'worker error'));
  // A last attempt can end before it recorded itself (a MongoDB write past its deadline): its
  // record must not stay `pending` for ever, or a replay would never take it.
  worker.on('failed', (job: Job | undefined, err: Error) => {
    if (!job || !(err instanceof BullUnrecoverable || job.attemptsMade >= (job.opts.attempts ?? 1))) return;
    const id = (job.data as { delivery_id?: string } | undefined)?.delivery_id ?? job.id;
    if (id) void deps.alerts.records.failIfPending(id, err.message).catch(() => undefined);
  });
  const ready = readyOf(worker);
  void worker.run();
  await ready;
  const close = once(async () => {
    try {
      await withTimeout(worker.close(), deps.shutdownMs, 'delivery drain');
    } catch {
      deps.logger.warn('webhook deliveries did not finish in time: closing anyway (they will be retried)');
      await worker.close(true);
    }
  });
  return { worker, close };
}
