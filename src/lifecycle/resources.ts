import type { Logger } from '../logger.js';
import { once } from './once.js';

interface Entry {
  readonly name: string;
  readonly close: () => Promise<void> | void;
}

/**
 * Owns what a process opened and closes it once, last opened first. Opening order therefore fixes
 * closing order: we open MongoDB, Redis, the queues and the services, then a role's scheduler,
 * workers and HTTP server, so shutdown closes HTTP first and MongoDB last. Each step runs in its own try/catch so one failure does not
 * leave the rest open; the errors are collected and logged.
 */
export class Resources {
  readonly #entries: Entry[] = [];
  readonly #stop = new AbortController();
  readonly #close = once(() => this.#closeAll());

  constructor(private readonly logger: Logger) {}

  /** Registers a resource; returns the value for chaining at the point of creation. */
  own<T>(name: string, value: T, close: (value: T) => Promise<void> | void): T {
    if (this.#close.started) throw new Error(`cannot open ${name}: shutting down`);
    this.#entries.push({ name, close: () => close(value) });
    return value;
  }

  get closing(): boolean {
    return this.#close.started;
  }

  /** Aborted when closing begins, before anything closes: what waits can answer at once. */
  get stopping(): AbortSignal {
    return this.#stop.signal;
  }

  /** Idempotent and single-flight: every caller gets the same promise. */
  close(): Promise<Error[]> {
    if (!this.#stop.signal.aborted) this.#stop.abort();
    return this.#close();
  }

  async #closeAll(): Promise<Error[]> {
    const errors: Error[] = [];
    while (this.#entries.length) {
      const entry = this.#entries.pop()!;
      try {
        await entry.close();
        this.logger.debug({ resource: entry.name }, 'closed');
      } catch (err) {
        const error = err instanceof Error ? err : new Error(String(err));
        errors.push(error);
        this.logger.error({ resource: entry.name, err: error }, 'close failed');
      }
    }
    return errors;
  }
}
