import { classShares } from '../../src/core/quota-classes.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inject } from 'vitest';
import { Redis } from 'ioredis';
import { QuotaGovernor } from '../../src/quota/governor.js';
import { governPort, isDailyQuota } from '../../src/quota/governed-port.js';
import { DayQuotaSpentError, UpstreamRateLimitedError } from '../../src/core/errors.js';
import type { DailyUsage } from '../../src/quota/daily-usage.js';
import type { UpstreamPort } from '../../src/upstream/port.js';
import { uniqueName } from '../helpers/context.js';
import { dropKeys } from '../helpers/redis-keys.js';

/** The upstream's own 429s fed back to the governor (a real Redis; the port is a stand-in that throws). */
let redis: Redis;
const prefix = uniqueName('swt_gport');
// These tests never reach MongoDB: the day's count starts at zero.
const usage = { record() {}, settled: async () => undefined, read: async () => ({ calls: 0, forced: 0 }) } as unknown as DailyUsage;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'));
});
afterAll(async () => {
  await dropKeys(redis, prefix);
  redis.disconnect();
});

function portThrowing(errors: Error[]): UpstreamPort {
  const getItems = vi.fn(async () => {
    const err = errors.shift();
    if (err) throw err;
    return { items: [], outcomes: {} };
  });
  return {
    country: 'JP',
    getItems,
    findByCode: vi.fn(),
    browseNode: vi.fn(),
    getBrowseNodes: vi.fn(),
    close: vi.fn(),
  } as unknown as UpstreamPort;
}

describe('governPort', () => {
  const governor = (): QuotaGovernor =>
    new QuotaGovernor(redis, prefix, {
      quotas: { JP: { perSecond: 5, burst: 1, perDay: 1_000 } },
      dayTimeZone: 'UTC',
      shares: classShares({ forced: 0.3 }),
      forcedReserve: 0,
      usage,
    });

  it('reads a quotaCode that speaks of a day as the daily quota', () => {
    expect(isDailyQuota(new UpstreamRateLimitedError('JP', 1_000, 'RequestsPerDay'))).toBe(true);
    expect(isDailyQuota(new UpstreamRateLimitedError('JP', 1_000, 'RequestsPerSecond'))).toBe(false);
    expect(isDailyQuota(new UpstreamRateLimitedError('JP', 1_000))).toBe(false);
  });

  it('holds the country for one interval (1/Q), not the whole second of Retry-After, and tries again', async () => {
    const g = governor();
    const hold = vi.spyOn(g, 'hold');
    const port = governPort(portThrowing([new UpstreamRateLimitedError('JP', 1_000, 'RequestsPerSecond')]), g, 'JP');
    await port.getItems(['B0TEST0001']);
    expect(hold).toHaveBeenCalledWith('JP', 200);
    g.close();
  });

  it('gives up after three throttled tries: the job decides what comes next', async () => {
    const g = governor();
    const port = governPort(
      portThrowing(Array.from({ length: 3 }, () => new UpstreamRateLimitedError('JP', 50, 'RequestsPerSecond'))),
      g,
      'JP',
    );
    await expect(port.getItems(['B0TEST0001'])).rejects.toBeInstanceOf(UpstreamRateLimitedError);
    g.close();
  });

  it('a daily 429 marks the day spent for every process and fails as DayQuotaSpentError', async () => {
    const g = governor();
    const port = governPort(portThrowing([new UpstreamRateLimitedError('JP', 1_000, 'RequestsPerDay')]), g, 'JP');
    await expect(port.getItems(['B0TEST0001'])).rejects.toBeInstanceOf(DayQuotaSpentError);
    expect((await g.day('JP')).spent).toBe(true);
    await expect(g.permit('JP', 'forced')).rejects.toBeInstanceOf(DayQuotaSpentError);
    g.close();
  });
});
