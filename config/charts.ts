/**
 * Price-chart rendering (GET /api/world/asin/{asin}/history.svg): the worker threads that draw
 * charts off the api's event loop, how many renders may wait for one, and how many renders an
 * account may cause a minute. Parsed by loadConfig (env.ts); used by src/catalog/chart-renderer.ts
 * and src/catalog/chart-budget.ts.
 */
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { duration, int } from './parsers.js';

export const chartsEnvSchema = z.object({
  /** Unset: one thread per core but one for the event loop, at least 1 and at most 2. */
  CHART_RENDER_THREADS: int(1, 64).optional(),
  CHART_RENDER_QUEUE: int(0, 10_000).default(16),
  CHART_RENDER_WAIT: duration.default(10_000),
  CHART_RENDERS_PER_MINUTE: int(0, 1_000_000).default(120),
});

export interface ChartsConfig {
  /** Worker threads rendering charts in each api process (started on the first chart). */
  readonly renderThreads: number;
  /** Renders that may wait for a thread in each api process; one more answers 503. */
  readonly renderQueue: number;
  /** How long a render may wait for a thread (ms); one that waited longer is not drawn and answers 503. */
  readonly renderWaitMs: number;
  /** Renders (not cached answers) one account may cause a minute, over every process (0: no cap). */
  readonly rendersPerMinute: number;
}

export function defaultRenderThreads(cores = availableParallelism()): number {
  return Math.min(2, Math.max(1, cores - 1));
}

export function buildChartsConfig(env: z.infer<typeof chartsEnvSchema>): ChartsConfig {
  return Object.freeze({
    renderThreads: env.CHART_RENDER_THREADS ?? defaultRenderThreads(),
    renderQueue: env.CHART_RENDER_QUEUE,
    renderWaitMs: env.CHART_RENDER_WAIT,
    rendersPerMinute: env.CHART_RENDERS_PER_MINUTE,
  });
}
