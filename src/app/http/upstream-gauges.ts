import type { Config } from '../../../config/env.js';
import type { Metrics } from '../../core/metrics.js';
import type { CountryBreakers } from '../../quota/breaker.js';
import type { QuotaGovernor } from '../../quota/governor.js';

/** What the gauges read: each country's breaker and pace margin, which every process shares in Redis. */
export interface UpstreamGaugeSources {
  readonly config: Pick<Config, 'countries'>;
  readonly breakers: Pick<CountryBreakers, 'status'>;
  readonly quota: Pick<QuotaGovernor, 'marginMs'>;
  readonly metrics: Metrics;
}

/**
 * Reads every country's breaker and pace margin into the gauges. Run on each scrape, like the queue
 * gauges: any process reports them, not only the worker that last paced or probed the country.
 */
export async function refreshUpstreamGauges(ctx: UpstreamGaugeSources): Promise<void> {
  await Promise.all(
    ctx.config.countries.map(async (country) => {
      const [breaker, margin] = await Promise.all([ctx.breakers.status(country), ctx.quota.marginMs(country)]);
      ctx.metrics.breakerOpen.set({ country }, breaker.state === 'open' ? 1 : 0);
      ctx.metrics.paceMargin.set({ country }, margin / 1_000);
    }),
  );
}
