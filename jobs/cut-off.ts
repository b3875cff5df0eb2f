import { WorkerShutdownError } from '../src/core/errors.js';
import { withTimeout } from '../src/db/mongo.js';

/**
 * Runs a job's handler until it settles, its deadline passes (`ms`) or BullMQ cancels it (the
 * worker's drain ran out of time: Worker.cancelAllJobs), whichever comes first. Either way the
 * controller given to the handler aborts, so a call still waiting for its permit stops waiting, and
 * the attempt fails as retryable. A handler that ignores the abort may still finish later, which is
 * harmless: every handler write is an idempotent upsert or a conditional update.
 */
export async function runCutOff<T>(
  run: (signal: AbortSignal) => Promise<T>,
  opts: { readonly ms: number; readonly cancel?: AbortSignal; readonly onTimeout: () => Error },
): Promise<T> {
  const deadline = new AbortController();
  const onCancel = (): void => deadline.abort(new WorkerShutdownError('the worker shut down before the job finished: it is retried'));
  if (opts.cancel?.aborted) onCancel();
  else opts.cancel?.addEventListener('abort', onCancel, { once: true });
  const stopped = new Promise<never>((_, reject) => {
    if (deadline.signal.aborted) reject(deadline.signal.reason as Error);
    else deadline.signal.addEventListener('abort', () => reject(deadline.signal.reason as Error), { once: true });
  });
  // The race settles once; the loser's rejection must not count as unhandled.
  stopped.catch(() => undefined);
  try {
    return await withTimeout(Promise.race([run(deadline.signal), stopped]), opts.ms, 'job', () => {
      const err = opts.onTimeout();
      deadline.abort(err);
      return err;
    });
  } finally {
    opts.cancel?.removeEventListener('abort', onCancel);
  }
}
