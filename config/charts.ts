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
  CHART_RENDER_THREADS: int(1, 64).optional().meta({
    description: 'Worker threads drawing price charts in each api process (started with its first chart).',
    unset: 'cores − 1, at least 1, at most 2',
  }),
  CHART_RENDER_QUEUE: int(0, 10_000)
    .default(16)
    .meta({ description: 'Charts that may wait for a render thread in each api process; one more answers 503.' }),
  CHART_RENDER_WAIT: duration.default(10_000).meta({
    description: 'How long a chart may wait for a render thread; one that waited longer is not drawn and answers 503.',
    defaultText: '10s',
  }),
  CHART_RENDERS_PER_MINUTE: int(0, 1_000_000).default(120).meta({
    description:
      'Price charts one account may have drawn a minute over every api process (cached answers are free; one more answers 429); `0` turns it off.',
  }),
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
