import type { JobContext } from '../context.js';
import type { JobPayload } from '../../jobs/registry.js';
import { writeOutcomes } from '../catalog-writes.js';

export interface RefreshResult {
  readonly country: string;
  readonly asins: readonly string[];
  readonly found: number;
  readonly notFound: number;
  readonly notAccessible: number;
}

/**
 * A batch of up to 10 ASINs of one country: one getItems call, one bulkWrite. Used by the scheduled
 * refreshes and by the forced update, which differ only in their priority on the queue.
 */
export async function refreshBatch(ctx: JobContext, data: JobPayload<'refresh.p0' | 'refresh.p1' | 'world.update'>, priorityLabel: string): Promise<RefreshResult> {
  const result = await ctx.upstream(data.country).getItems(data.asins);
  const written = await writeOutcomes(ctx.mongo, ctx.config, data.country, result.items, result.outcomes);
  if ('due' in data && data.due !== undefined) {
    ctx.metrics.refreshLag.observe({ country: data.country, priority: priorityLabel }, Math.max(0, Date.now() - data.due) / 1_000);
  }
  return { country: data.country, asins: data.asins, found: written.found, notFound: written.notFound, notAccessible: written.notAccessible };
}
