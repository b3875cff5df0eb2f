import type { Cluster } from 'ioredis';
import mongoose from 'mongoose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { asins, completions, insertDue, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { until } from '../helpers/until.js';
import { productModel } from '../../src/models/product.js';
import { countryTag } from '../../src/db/redis-keys.js';
import { startLocalCluster, type LocalCluster } from './local-cluster.js';

/**
 * A master dies during a refresh. Its replica takes over (about the node timeout, 2 s, later) and
 * BullMQ's at-least-once delivery brings every job to an end: no product misses its update. The
 * day's count lives on the same shard as the country's queues; it is replicated like them, so the
 * daily cap still holds after the failover. This file has a cluster of its own, which it breaks.
 */
const CAP = 50;
let cluster: LocalCluster;
let p: Pipeline;
beforeAll(async () => {
  cluster = await startLocalCluster();
  p = await startPipeline({
    REDIS_CLUSTER_NODES: cluster.nodes.map((n) => `${n.host}:${n.port}`).join(','),
    QUOTA_RPS: '10',
    QUOTA_PER_DAY: String(CAP),
    FORCED_RESERVE: '0',
  });
});
afterAll(async () => {
  await p?.close();
  await cluster?.stop();
});

const calls = (): number => p.sim.stats().countries.JP?.getItems?.calls ?? 0;

/** The port of the master that serves `tag`'s slot now. */
async function masterOf(redis: Cluster, tag: string): Promise<number> {
  const slot = await redis.cluster('KEYSLOT', tag);
  const range = (await redis.cluster('SLOTS')).find(([from, to]) => from <= slot && slot <= to);
  if (!range?.[2]) throw new Error(`no master serves slot ${slot}`);
  return range[2][1];
}

it('a killed master loses no product update, and the daily cap holds after the failover', async () => {
  const redis = p.ctx.redis as Cluster;
  const list = await insertDue(p.ctx.mongo, asins('B0FAIL', 300));
  const worker = p.workers.workers.get('JP')!;
  const firstFive = completions(worker, 5);
  for (let i = 0; i < list.length; i += 10) await p.ctx.jobs.add('refresh.p1', { country: 'JP', asins: list.slice(i, i + 10) });
  await firstFive;

  const victim = await masterOf(redis, countryTag(p.ctx.redisPrefix, 'JP'));
  await cluster.kill(victim);
  await cluster.waitHealthy(60_000);
  expect(await masterOf(redis, countryTag(p.ctx.redisPrefix, 'JP'))).not.toBe(victim);

  const products = productModel(p.ctx.mongo);
  const refreshed = (): Promise<number> =>
    products.countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: mongoose.trusted({ $ne: null }) });
  await until('every product refreshed after the failover', async () => (await refreshed()) === list.length, 75_000, 200);
  const used = calls();
  // A job whose completion the dead master had not yet passed on runs again: at least once, not much more.
  expect(used).toBeGreaterThanOrEqual(30);
  expect(used).toBeLessThanOrEqual(CAP);

  // More work than the day has calls left: the governor, on the promoted replica, stops at the cap.
  const more = await insertDue(p.ctx.mongo, asins('B0MORE', 300));
  for (let i = 0; i < more.length; i += 10) await p.ctx.jobs.add('refresh.p1', { country: 'JP', asins: more.slice(i, i + 10) });
  await until('the day spent', async () => (await p.ctx.quota.day('JP')).used >= CAP, 60_000, 200);
  await until('no job left running', async () => (await p.ctx.jobs.queue('JP').getActiveCount()) === 0, 30_000, 200);
  expect(calls()).toBe(CAP);
  expect((await p.ctx.quota.day('JP')).used).toBe(CAP);
});
