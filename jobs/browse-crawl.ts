import mongoose from 'mongoose';
import { z } from 'zod';
import { countrySchema } from '../src/catalog/identifiers.js';
import { writeFoundItems } from '../src/catalog/writes.js';
import { productModel } from '../src/models/product.js';
import { watchModel } from '../src/models/watch.js';
import { MAX_PAGE } from '../src/upstream/port.js';
import { defineJob, type JobContext } from './kind.js';
import { DEFAULT_RETRY } from '../config/retry.js';

/**
 * A watched browse node's crawl, page by page, in each country: planned once a crawl interval by
 * the scheduler's slow tick, each page its own job (enqueued by the page before), so every upstream
 * call takes its own permit of the quota governor and a failed page retries alone.
 */

const crawlPayload = z.object({
  country: countrySchema,
  nodeId: z.string().regex(/^\d{1,20}$/),
  page: z.number().int().min(1).max(MAX_PAGE).default(1),
  /** ASINs found on earlier pages. */
  found: z.number().int().min(0).default(0),
  /** The crawl's id: the next page's job id derives from it. */
  crawlId: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,80}$/)
    .optional(),
});

/** Enqueues a crawl of every watched browse node not crawled within the interval, once a day at most. */
export async function planCrawls(ctx: JobContext, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - ctx.config.workers.scheduler.browseIntervalMs);
  const nodes = await watchModel(ctx.mongo).distinct('key', {
    kind: 'browse',
    $or: [{ last_crawl_at: null }, { last_crawl_at: mongoose.trusted({ $lt: cutoff }) }],
  });
  let added = 0;
  for (const nodeId of nodes) {
    for (const country of ctx.config.countries) {
      // One crawl per node, country and day, however many schedulers ask.
      const crawlId = `crawl-${country}-${nodeId}-${now.toISOString().slice(0, 10)}`;
      await ctx.jobs.add('browse.crawl', { country, nodeId, crawlId }, { jobId: `${crawlId}-p1` });
      added++;
    }
  }
  return added;
}

/**
 * One page: upserts what it lists, then enqueues the next page (as far as the upstream allows) or,
 * on the last, records the crawl's time and count on every watch entry of the node. Products found
 * this way that nobody watches join the schedule at priority 0, one priority-0 interval from now,
 * since the crawl has just fetched them.
 */
export const browseCrawlJob = defineJob({
  name: 'browse.crawl',
  payload: crawlPayload,
  priority: 5,
  lane: 'scheduled',
  queue: 'work',
  retry: DEFAULT_RETRY,
  async run(ctx, data, run): Promise<{ page: number; asins: number; last: boolean }> {
    const result = await run.upstream.browseNode(data.nodeId, data.page);
    const now = new Date();
    await writeFoundItems(ctx.mongo, ctx.config, data.country, result.items, {
      now,
      onChanges: (changes) => ctx.deliveries.enqueueFor(changes).then(() => undefined),
    });
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
      await watchModel(ctx.mongo).updateMany(
        { kind: 'browse', key: data.nodeId },
        { $set: { last_crawl_at: now, last_crawl_count: found, crawl_waiting_until: null } },
      );
    } else {
      const crawlId = data.crawlId ?? run.id ?? `${data.country}-${data.nodeId}`;
      // The next page's id derives from this crawl's: a retried page never enqueues its successor twice.
      await ctx.jobs.add(
        'browse.crawl',
        { country: data.country, nodeId: data.nodeId, page: data.page + 1, found, crawlId },
        { jobId: `${crawlId}-p${data.page + 1}` },
      );
    }
    return { page: data.page, asins: found, last };
  },
  /** The node's watch entries say until when the crawl waits; its last page clears it. */
  async whenDaySpent(ctx, data, until) {
    await watchModel(ctx.mongo).updateMany(
      { kind: 'browse', key: data.nodeId, crawl_waiting_until: mongoose.trusted({ $ne: until }) },
      { $set: { crawl_waiting_until: until } },
    );
  },
});
