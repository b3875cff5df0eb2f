import type { Logger } from '../logger.js';

export interface ShutdownOptions {
  readonly logger: Logger;
  /** Phase one: stop intake and drain. Resolves when everything is closed. */
  readonly drain: () => Promise<unknown>;
  /** How long phase one may take before we force the exit. */
  readonly timeoutMs: number;
  readonly exit?: (code: number) => void;
}

const SIGNAL_CODES: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Two-phase shutdown, as graphile-worker does it: the first SIGTERM/SIGINT drains under a deadline
 * and exits 0; a second signal, or the deadline, exits at once with a non-zero code.
 */
export function installSignalHandlers({ logger, drain, timeoutMs, exit = (c) => process.exit(c) }: ShutdownOptions): () => void {
  let draining = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (draining) {
      logger.warn({ signal }, 'second signal: exiting now');
      exit(SIGNAL_CODES[signal] ?? 1);
      return;
    }
    draining = true;
    logger.info({ signal, timeoutMs }, 'shutting down');
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown deadline passed: exiting with work still open');
      exit(1);
    }, timeoutMs);
    deadline.unref();
    drain().then(
      () => {
        clearTimeout(deadline);
        logger.info('shutdown complete');
        logger.flush?.();
        exit(0);
      },
      (err: unknown) => {
        clearTimeout(deadline);
        logger.error({ err }, 'shutdown failed');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  };
}
