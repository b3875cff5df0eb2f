import mongoose from 'mongoose';
import type { Connection } from 'mongoose';
import type { Redis } from '../db/redis.js';
import type { Config } from '../../config/env.js';
import type { Country } from '../core/identifiers.js';
import { watchModel } from '../models/watch.js';
import { usedDailyMany } from '../accounts/limits.js';
import type { AccountWeights } from '../accounts/weights.js';
import type { AccountRef } from '../fairness/fair-classes.js';
import { quotaDayOf } from '../quota/quota-day.js';

/** Where crawls go: the country's crawl queue (the job producer, jobs/queues.ts); each page is a browse.crawl job. */
export interface CrawlQueue {
  add(
    name: 'browse.crawl',
    data: { country: Country; nodeId: string; crawlId: string },
    opts: { jobId: string },
    account: AccountRef,
  ): Promise<string>;
}

/** What planning crawls uses of the application's context. */
export interface CrawlPlanDeps {
  readonly config: Pick<Config, 'countries' | 'accounts' | 'quota' | 'workers'>;
  readonly mongo: Connection;
  /** Fail-fast commands: the accounts' crawl pages today. */
  readonly redis: Redis;
  readonly redisPrefix: string;
  readonly weights: Pick<AccountWeights, 'of'>;
  readonly jobs: CrawlQueue;
}

/** Browse entries a planning pass reads at most: the rest are due still and come in the next pass. */
const PLAN_BATCH = 1_000;

/**
 * Enqueues a crawl of each watched browse node that is due, in every country: a bounded batch of
 * due entries a pass, read from the (kind, next_crawl_at) index, longest due first. Each crawl is
 * charged to the node's watcher that has crawled the least today, among those with crawl pages
 * left (ACCOUNT_MAX_CRAWL_PAGES_PER_DAY), and goes into the crawl queue at that account's fair
 * place; a node none of whose watchers has pages left waits for the next quota day. The entries
 * are claimed a lease ahead, so a crawl still under way is not planned again.
 */
export async function planCrawls(ctx: CrawlPlanDeps, now = new Date()): Promise<number> {
  const watches = watchModel(ctx.mongo);
  const due = await watches
    .find({ kind: 'browse', $or: [{ next_crawl_at: null }, { next_crawl_at: mongoose.trusted({ $lte: now }) }] })
    .sort({ next_crawl_at: 1 })
    .limit(PLAN_BATCH)
    .select({ key: 1, user_id: 1 })
    .lean();
  if (due.length === 0) return 0;
  const watchers = new Map<string, Set<string>>();
  for (const w of due) watchers.set(w.key, (watchers.get(w.key) ?? new Set()).add(w.user_id.toHexString()));

  const day = quotaDayOf(now.getTime(), ctx.config.quota.dayTimeZone);
  const cap = ctx.config.accounts.maxCrawlPagesPerDay;
  const accounts = [...new Set(due.map((w) => w.user_id.toHexString()))];
  const used = await usedDailyMany(ctx.redis, ctx.redisPrefix, accounts, 'crawl-pages', day.key);
  const planned: string[] = [];
  const waiting: string[] = [];
  let added = 0;
  for (const [nodeId, who] of watchers) {
    const payer = [...who]
      .filter((u) => cap === 0 || used.get(u)! < cap)
      .sort((a, b) => used.get(a)! - used.get(b)! || a.localeCompare(b))[0];
    if (!payer) {
      waiting.push(nodeId);
      continue;
    }
    planned.push(nodeId);
    const account = { id: payer, weight: await ctx.weights.of(payer) };
    for (const country of ctx.config.countries) {
      // One crawl per node, country and day, however many schedulers ask.
      const crawlId = `crawl-${country}-${nodeId}-${now.toISOString().slice(0, 10)}`;
      await ctx.jobs.add('browse.crawl', { country, nodeId, crawlId }, { jobId: `${crawlId}-p1` }, account);
      added++;
    }
  }
  if (planned.length) {
    await watches.updateMany(
      { kind: 'browse', key: mongoose.trusted({ $in: planned }) },
      { $set: { next_crawl_at: new Date(now.getTime() + ctx.config.workers.scheduler.leaseMs) } },
    );
  }
  if (waiting.length) {
    await watches.updateMany(
      { kind: 'browse', key: mongoose.trusted({ $in: waiting }) },
      { $set: { next_crawl_at: new Date(day.end), crawl_waiting_until: new Date(day.end) } },
    );
  }
  return added;
}
