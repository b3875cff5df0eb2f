import mongoose from 'mongoose';
import type { JobContext } from '../context.js';
import type { JobPayload } from '../../jobs/registry.js';
import { MAX_PAGE } from '../../src/upstream/port.js';
import { writeFoundItems } from '../catalog-writes.js';
import { productModel } from '../../src/models/product.js';
import { watchModel } from '../../src/models/watch.js';

/**
 * One page of a watched browse node in one country: upserts what it lists, then enqueues the next
 * page (as far as the upstream allows, page 10 at most) or, on the last page, records the crawl's
 * time and count on every watch entry of the node. One page per job keeps every upstream call
 * with its own permit of the quota governor, and a failed page retries alone.
 *
 * Products found this way that nobody watches join the schedule at priority 0, one priority-0
 * interval from now, since the crawl has just fetched them.
 */
export async function crawlBrowsePage(ctx: JobContext, data: JobPayload<'browse.crawl'>, jobId: string | undefined): Promise<{ page: number; asins: number; last: boolean }> {
  const result = await ctx.upstream(data.country, 'browse.crawl').browseNode(data.nodeId, data.page);
  const now = new Date();
  await writeFoundItems(ctx.mongo, data.country, result.items, now);
  const asins = [...new Set(result.items.map((i) => i.asin))];
  if (asins.length) {
    await productModel(ctx.mongo).updateMany(
      { country: data.country, asin: mongoose.trusted({ $in: asins }), priority: null },
      { $set: { priority: 0, next_refresh_at: new Date(now.getTime() + ctx.config.refresh.intervalMs[0]) } },
    );
  }
  const found = data.found + asins.length;
  const last = !result.hasMore || data.page >= MAX_PAGE;
  if (last) {
    await watchModel(ctx.mongo).updateMany({ kind: 'browse', key: data.nodeId }, { $set: { last_crawl_at: now, last_crawl_count: found, crawl_waiting_until: null } });
  } else {
    const crawlId = data.crawlId ?? jobId ?? `${data.country}-${data.nodeId}`;
    // The next page's id derives from this crawl's: a retried page never enqueues its successor twice.
    await ctx.jobs.add('browse.crawl', { country: data.country, nodeId: data.nodeId, page: data.page + 1, found, crawlId },
      { jobId: `${crawlId}-p${data.page + 1}` });
  }
  return { page: data.page, asins: found, last };
}
