import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { runCli } from '../helpers/cli.js';
import { cliDatabase, uniqueName } from '../helpers/context.js';
import { queueName, queuePrefix } from '../../jobs/queue-names.js';
import { dropKeys } from '../helpers/redis-keys.js';
import { testBreakers } from '../helpers/breakers.js';
import { countryTag } from '../../src/db/redis-keys.js';

const db = cliDatabase('sw_qcli');
const prefix = uniqueName('swq');
const env = { ...db.env, REDIS_PREFIX: prefix, COUNTRIES: 'JP,US', QUOTA_RPS: '3', QUOTA_PER_DAY: '5000' };
let redis: Redis;
let jp: Queue;
beforeAll(() => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
  jp = new Queue(queueName('JP'), { connection: redis, prefix: queuePrefix(prefix, 'JP') });
});
afterAll(async () => {
  await jp?.obliterate({ force: true }).catch(() => undefined);
  await jp?.close();
  await dropKeys(redis, prefix);
  redis?.disconnect();
  await db.close();
});

async function status(): Promise<
  Record<
    string,
    {
      paused: boolean;
      jobs: Record<string, number>;
      due: { p1: number; p0: number };
      quota: Record<string, number>;
      breaker: Record<string, string>;
    }
  >
> {
  const res = await runCli(['queues:status'], env);
  expect(res.stderr).toBe('');
  expect(res.code).toBe(0);
  return (JSON.parse(res.stdout) as { countries: Awaited<ReturnType<typeof status>> }).countries;
}

describe('queues:status and queues:resume', () => {
  it('report each country and resume a paused one', async () => {
    const now = Date.now();
    const product = (asin: string, priority: 0 | 1, dueIn: number) => ({
      country: 'JP',
      asin,
      priority,
      next_refresh_at: new Date(now + dueIn),
      created_at: new Date(now),
      status: 'ok',
      // As a refresh writes it: a product without it is one from before the deals feed, which the
      // first start figures and says so on stderr.
      price_days: [],
    });
    await db.conn
      .collection('products')
      .insertMany([
        product('B0QSTAT001', 1, -1_000),
        product('B0QSTAT002', 1, -2_000),
        product('B0QSTAT003', 0, -1_000),
        product('B0QSTAT004', 0, 3_600_000),
      ]);
    // As a fatal upstream error leaves it: JP paused with work waiting.
    await jp.pause();
    await jp.add('refresh.p1', { country: 'JP', asins: ['B0QSTAT009'] }, { priority: 3 });

    const before = await status();
    expect(Object.keys(before)).toEqual(['JP', 'US']);
    expect(before.JP).toMatchObject({ paused: true, due: { p1: 2, p0: 1 }, quota: { perSecond: 3, perDay: 5000, usedToday: 0 } });
    expect((before.JP!.jobs.prioritized ?? 0) + (before.JP!.jobs.wait ?? 0)).toBe(1);
    expect(before.US).toMatchObject({ paused: false, due: { p1: 0, p0: 0 } });

    const resumed = await runCli(['queues:resume', '--country', 'jp'], env);
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toEqual({ country: 'JP', resumed: true });
    expect((await status()).JP!.paused).toBe(false);
    expect(await jp.isPaused()).toBe(false);
    // Resuming a queue that runs is harmless, and says so.
    expect(JSON.parse((await runCli(['queues:resume', '--country', 'JP'], env)).stdout)).toEqual({ country: 'JP', resumed: false });
  });

  it("shows each country's pace margin and breaker, as every process shares them in Redis", async () => {
    await redis.hset(`${countryTag(prefix, 'JP')}:gov:pace`, 'm', '12.5');
    const { breakers } = testBreakers(redis, prefix);
    await breakers.open('US', 'eligibility', 'AssociateNotEligible', { op: 'getItems', args: [['B0QSTAT001']] });
    const now = await status();
    expect(now.JP!.quota.paceMarginMs).toBe(12.5);
    expect(now.JP!.breaker).toEqual({ state: 'closed' });
    expect(now.US!.quota.paceMarginMs).toBe(0);
    expect(now.US!.breaker).toMatchObject({ state: 'open', kind: 'eligibility', reason: 'AssociateNotEligible' });
    expect(Date.parse(now.US!.breaker.nextProbeAt!)).toBeGreaterThan(Date.parse(now.US!.breaker.since!));
    await breakers.close('US');
  });

  it('refuses an unknown country with the usage and exit code 2', async () => {
    const res = await runCli(['queues:resume', '--country', 'FR'], env);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/--country must be one of JP, US/);
    expect(res.stdout).toBe('');
  });
});
