import mongoose, { Types } from 'mongoose';
import { z } from 'zod';
import { countrySchema } from '../src/core/identifiers.js';
import { writeFoundItems } from '../src/catalog/writes.js';
import { productModel } from '../src/models/product.js';
import { watchModel } from '../src/models/watch.js';
import { MAX_PAGE } from '../src/upstream/port.js';
import { defineJob } from './kind.js';
import { DEFAULT_RETRY } from '../config/retry.js';
import { addDaily } from '../src/accounts/limits.js';
import { quotaDayOf } from '../src/quota/quota-day.js';
import { fairSchema } from '../src/fairness/fair-classes.js';
import { nextRefreshAt } from '../src/scheduling/change-rate.js';
import { FOUND_PRIORITY } from '../src/watch/service.js';

/**
 * A watched browse node's crawl, page by page, in each country: planned once a crawl interval by
 * the scheduler's slow tick (planCrawls, src/scheduling/crawls.ts), each page its own job (enqueued by the page before), so every upstream
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
  fair: fairSchema.optional(),
});

/**
 * One page: upserts what it lists, then enqueues the next page (as far as the upstream allows) or,
 * on the last, records the crawl's time and count on every watch entry of the node. Products found
 * this way that nobody watches join the schedule at priority 0, one priority-0 interval from now,
 * since the crawl has just fetched them.
 */
export const browseCrawlJob = defineJob({
  name: 'browse.crawl',
  payload: crawlPayload,
  cls: 'crawl',
  priority: 1,
  retry: DEFAULT_RETRY,
  async run(ctx, data, run): Promise<{ page: number; asins: number; last: boolean }> {
    const result = await run.upstream.browseNode(data.nodeId, data.page);
    const now = new Date();
    // The page is the paying account's, whatever it found (ACCOUNT_MAX_CRAWL_PAGES_PER_DAY).
    if (data.fair) {
      const day = quotaDayOf(now.getTime(), ctx.config.quota.dayTimeZone);
      await addDaily(ctx.redis, ctx.redisPrefix, data.fair.account, 'crawl-pages', day.key);
    }
    await writeFoundItems(ctx.mongo, ctx.config, data.country, result.items, {
      now,
      onChanges: (changes, written) => ctx.deliveries.enqueueFor(changes, written).then(() => undefined),
    });
    const asins = [...new Set(result.items.map((i) => i.asin))];
    if (asins.length) {
      await productModel(ctx.mongo).updateMany(
        { country: data.country, asin: mongoose.trusted({ $in: asins }), priority: null },
        {
          $set: {
            priority: FOUND_PRIORITY,
            // Written just now by writeFoundItems, each starts its priority's interval from now.
            next_refresh_at: nextRefreshAt({
              why: 'refreshed',
              config: ctx.config,
              priority: FOUND_PRIORITY,
              lastAttemptAt: now,
              changeRate: null,
              now,
            }),
            // Refreshed for the account whose crawl found them: its share, not everyone's, pays.
            owners: data.fair ? [new Types.ObjectId(data.fair.account)] : [],
          },
        },
      );
    }
    const found = data.found + asins.length;
    const last = !result.hasMore || data.page >= MAX_PAGE;
    if (last) {
      await watchModel(ctx.mongo).updateMany(
        { kind: 'browse', key: data.nodeId },
        {
          $set: {
            last_crawl_at: now,
            last_crawl_count: found,
            crawl_waiting_until: null,
            next_crawl_at: new Date(now.getTime() + ctx.config.workers.scheduler.browseIntervalMs),
          },
        },
      );
    } else {
      const crawlId = data.crawlId ?? run.id ?? `${data.country}-${data.nodeId}`;
      // The next page's id derives from this crawl's: a retried page never enqueues its successor twice.
      const account = data.fair ? { id: data.fair.account, weight: await ctx.weights.of(data.fair.account) } : undefined;
      await ctx.jobs.add(
        'browse.crawl',
        { country: data.country, nodeId: data.nodeId, page: data.page + 1, found, crawlId },
        { jobId: `${crawlId}-p${data.page + 1}` },
        account,
      );
    }
    return { page: data.page, asins: found, last };
  },
  /**
   * The node's watch entries say until when the crawl waits (its last page clears it), and stay
   * claimed past then, so the planner does not start the node's crawl again meanwhile.
   */
  async whenDaySpent(ctx, data, until) {
    await watchModel(ctx.mongo).updateMany(
      { kind: 'browse', key: data.nodeId, crawl_waiting_until: mongoose.trusted({ $ne: until }) },
      { $set: { crawl_waiting_until: until, next_crawl_at: new Date(until.getTime() + ctx.config.workers.scheduler.leaseMs) } },
    );
  },
});
