import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { DELIVERIES_QUEUE, runDelivery, type DeliveryDeps } from '../jobs/deliveries.js';
import { withTimeout } from '../src/db/mongo.js';
import { once } from '../src/lifecycle/once.js';

/** Webhooks in flight per process: each mostly waits on a receiver, so more than the upstream's. */
const DELIVERY_CONCURRENCY = 16;

export interface RunningDeliveries {
  readonly worker: Worker;
  close(): Promise<void>;
}

/**
 * The worker of the deliveries queue. On shutdown it lets attempts in flight finish within the
 * deadline (each is bounded by WEBHOOK_TIMEOUT), then closes; an attempt cut off is retried.
 */
export async function startDeliveryWorker(
  deps: DeliveryDeps & { readonly redisPrefix: string; readonly shutdownMs: number },
  connection: Redis,
): Promise<RunningDeliveries> {
  const worker = new Worker(DELIVERIES_QUEUE, (job) => runDelivery(deps, job), {
    connection,
    prefix: deps.redisPrefix,
    concurrency: DELIVERY_CONCURRENCY,
    autorun: false,
  });
  worker.on('error', (err) => deps.logger.warn({ queue: DELIVERIES_QUEUE, err: { message: err.message } }, 'worker error'));
  void worker.run();
  await worker.waitUntilReady();
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
