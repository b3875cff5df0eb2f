import type { Worker } from 'bullmq';
import type { Logger } from '../src/logger.js';
import { withTimeout } from '../src/db/mongo.js';

/** How long a worker may take to settle its cut-off jobs (moving them back for a retry) before it is left as it is. */
const CUT_OFF_MS = 1_000;

/**
 * Stops a process's workers within one deadline, all at once. Every close starts in the same tick,
 * and a closing worker takes no job, so none starts anywhere while another drains; then all let
 * their active jobs finish in parallel, and whatever has not finished by the deadline is cut
 * off: its handler fails as retryable and the job goes back to its queue. (BullMQ's pause(true)
 * would stop intake too, but a paused worker's close() no longer waits for its active jobs.)
 */
export async function drainWorkers(workers: readonly Worker[], deadlineMs: number, logger: Logger): Promise<void> {
  await Promise.all(
    workers.map(async (w) => {
      try {
        await withTimeout(w.close(), deadlineMs, 'worker drain');
      } catch {
        // Once closing, BullMQ's close(true) only waits for the same close: the jobs themselves must
        // be cut off (their handlers see BullMQ's cancel signal and fail as retryable at once).
        logger.warn({ queue: w.name }, 'active jobs did not finish in time: cutting them off (they are retried)');
        w.cancelAllJobs('the worker shut down before the job finished');
        await withTimeout(w.close(), CUT_OFF_MS, 'worker close').catch(() => undefined);
      }
    }),
  );
}
