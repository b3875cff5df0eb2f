import type { Worker } from 'bullmq';
import type { Logger } from '../src/logger.js';
import { withTimeout } from '../src/db/mongo.js';

/**
 * Stops a process's workers within one deadline, all at once. Every close starts in the same tick,
 * and a closing worker takes no job, so none starts anywhere while another drains; then all let
 * their active jobs finish in parallel, and whatever has not finished by the deadline is closed
 * anyway. A job cut off this way keeps its lock until it expires and is then retried by another
 * worker. (BullMQ's pause(true) would stop intake too, but a paused worker's close() no longer
 * waits for its active jobs.)
 */
export async function drainWorkers(workers: readonly Worker[], deadlineMs: number, logger: Logger): Promise<void> {
  await Promise.all(
    workers.map(async (w) => {
      try {
        await withTimeout(w.close(), deadlineMs, 'worker drain');
      } catch {
        logger.warn({ queue: w.name }, 'active jobs did not finish in time: closing anyway (they are retried after their lock expires)');
        await w.close(true).catch(() => undefined);
      }
    }),
  );
}
