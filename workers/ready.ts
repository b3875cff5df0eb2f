import type { Worker } from 'bullmq';

/**
 * Resolves once the worker's main and blocking connections are both ready (BullMQ's 'ready' event;
 * `waitUntilReady()` answers for the main one only). Closing a worker whose blocking connection is
 * still connecting can wait for ever on a Redis Cluster client that never reports its end, so a
 * process counts its workers started only from here. Call it right after `new Worker`: the event
 * comes once.
 */
export function readyOf(worker: Worker): Promise<void> {
  return new Promise((resolve) => worker.once('ready', () => resolve()));
}
