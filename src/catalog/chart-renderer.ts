/**
 * Draws price charts on a fixed pool of worker threads (piscina), so that a render's tens to hundreds
 * of milliseconds of vega layout never hold the api's event loop. The pool starts with the first chart
 * (the roles that never draw one pay nothing) and is closed by its owner, the context.
 *
 * At most `threads` charts are drawn at once and `queue` more wait; one more is refused at once with
 * 503 and Retry-After (about the time a chart now takes from admission to answer), rather than
 * waiting without end behind a client that asks for many. The threads run at a lower priority than
 * the event loop, so on a busy machine a render can wait long: one that has not reached a thread
 * within `renderWaitMs` is not drawn and answers 503 too.
 */
import { Piscina } from 'piscina';
import type { ChartsConfig } from '../../config/charts.js';
import { ServiceUnavailableError } from '../core/errors.js';
import type { PriceChartInput } from './price-chart.js';
import type { RenderTask } from './chart-worker.js';

/**
 * The worker's module beside this one: compiled (`.js`, dist/) or, under tsx and vitest, the
 * TypeScript source, which the thread loads through tsx's hooks as the main thread does.
 */
function workerModule(): { filename: string; execArgv: string[] | undefined } {
  const source = import.meta.url.endsWith('.ts');
  const filename = new URL(`./chart-worker.${source ? 'ts' : 'js'}`, import.meta.url).href;
  const hasTsx = /\btsx\b/.test(process.execArgv.join(' '));
  return { filename, execArgv: source && !hasTsx ? [...process.execArgv, '--import', 'tsx'] : undefined };
}

const RENDER_NICE = 10;

export class ChartRenderer {
  #pool: Piscina<RenderTask, string | null> | undefined;
  #inFlight = 0;
  #closed = false;
  /** The time from a chart's admission to its answer, smoothed: what Retry-After says. */
  #answerMs = 200;

  constructor(private readonly opts: Pick<ChartsConfig, 'renderThreads' | 'renderQueue' | 'renderWaitMs'>) {}

  /** Charts being drawn or waiting for a thread. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Throws the 503 a render would meet now: before the work a render needs is done. */
  checkRoom(): void {
    if (this.#closed) throw new ServiceUnavailableError('The server is shutting down; ask again shortly.', 1);
    if (this.#inFlight >= this.opts.renderThreads + this.opts.renderQueue) throw this.#busy();
  }

  #busy(): ServiceUnavailableError {
    return new ServiceUnavailableError(
      'Too many charts are being drawn at the moment; ask again shortly.',
      Math.max(1, Math.ceil(this.#answerMs / 1000)),
    );
  }

  /** The chart as an SVG document; 503 when the queue is full or the process is closing. */
  async render(input: PriceChartInput): Promise<string> {
    this.checkRoom();
    this.#inFlight++;
    const started = performance.now();
    try {
      const svg = await this.#start().run({ input, startBy: Date.now() + this.opts.renderWaitMs });
      this.#answerMs += (performance.now() - started - this.#answerMs) / 8;
      if (svg === null) throw this.#busy();
      return svg;
    } finally {
      this.#inFlight--;
    }
  }

  #start(): Piscina<RenderTask, string | null> {
    if (!this.#pool) {
      const { filename, execArgv } = workerModule();
      this.#pool = new Piscina({
        filename,
        ...(execArgv ? { execArgv } : {}),
        minThreads: this.opts.renderThreads,
        maxThreads: this.opts.renderThreads,
        // Admission is counted above; the pool's own queue never refuses what was let in.
        maxQueue: Infinity,
        // Linux nices each thread on its own: the event loop's answers (and the other processes on
        // the machine) go before a chart when the cores are short. piscina does it through its
        // optional @napi-rs/nice, and skips it where that is missing.
        niceIncrement: RENDER_NICE,
      });
    }
    return this.#pool;
  }

  /** Ends the threads; a render still under way is cut off (the HTTP server has drained before). */
  async close(): Promise<void> {
    this.#closed = true;
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.destroy();
  }
}
