import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { Redis } from 'ioredis';
import mongoose, { type Connection } from 'mongoose';
import { QuotaGovernor } from '../../src/quota/governor.js';
import { DailyUsage } from '../../src/quota/daily-usage.js';
import { classShares } from '../../src/core/quota-classes.js';
import { registerModels } from '../../src/models/index.js';
import { mongoUriFor, uniqueName } from '../helpers/context.js';
import { dropKeys } from '../helpers/redis-keys.js';

/**
 * The forced-update lane across real processes: a child process holds a backlog of scheduled refreshes
 * (each of its callers books a start up to the governor's look-ahead before it comes), this one
 * asks for forced updates at random moments. Every start is read on Redis's clock.
 */
const FIXTURE = fileURLToPath(new URL('./fixtures/refresh-backlog.ts', import.meta.url));
const Q = 10;
const dbName = uniqueName('sw_govproc');
const prefix = uniqueName('swt_govproc');
let redis: Redis;
let mongo: Connection;
let child: ChildProcess | undefined;

beforeAll(async () => {
  redis = new Redis(inject('redisUrl'));
  mongo = await mongoose.createConnection(mongoUriFor(dbName)).asPromise();
  registerModels(mongo);
});
afterAll(async () => {
  child?.kill('SIGKILL');
  await dropKeys(redis, prefix);
  await mongo.dropDatabase().catch(() => undefined);
  await mongo.close();
  redis.disconnect();
});

describe('a forced update beside another process backlog', () => {
  it('takes the next slot, before the starts that process had booked, and the pace holds', { timeout: 30_000 }, async () => {
    // Shares where one refresh start between two forced updates leaves the forced updates' tag
    // behind V: each forced update then claims the next start, and only the pace holds it.
    const share = '0.5';
    child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
      env: {
        PATH: process.env.PATH ?? '',
        REDIS_URL: inject('redisUrl'),
        MONGODB_URI: mongoUriFor(dbName),
        PREFIX: prefix,
        QUOTA_RPS: String(Q),
        FORCED_SHARE: share,
        CALLERS: '6',
        MS: '4000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const refreshes: number[] = [];
    let onReady!: () => void;
    const ready = new Promise<void>((resolve) => (onReady = resolve));
    const exited = new Promise<number | null>((resolve) => child!.once('exit', resolve));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const msg = JSON.parse(line) as { ready?: boolean; bookedAt?: number };
      if (msg.ready) onReady();
      if (msg.bookedAt !== undefined) refreshes.push(msg.bookedAt);
    });
    await ready;

    const usage = new DailyUsage(mongo);
    const forced = new QuotaGovernor(redis, prefix, {
      quotas: { JP: { perSecond: Q, burst: 1, perDay: 1e9 } },
      dayTimeZone: 'UTC',
      shares: classShares({ forced: Number(share) }),
      forcedReserve: 0,
      usage,
    });
    const asks: { grantedAt: number; start: number }[] = [];
    try {
      for (let i = 0; i < 8; i++) {
        await new Promise((r) => setTimeout(r, 150 + Math.random() * 200));
        const { grantedAt, bookedAt } = await forced.permit('JP', 'forced');
        asks.push({ grantedAt, start: bookedAt });
      }
    } finally {
      forced.close();
      await usage.settled();
    }
    expect(await exited).toBe(0);

    for (const { grantedAt, start } of asks) {
      // No start of the other process came between the grant and the forced update's start, not
      // even one it had booked before: the forced update got the next slot, one interval away at most.
      expect(refreshes.filter((t) => t > grantedAt && t < start)).toEqual([]);
      expect(start - grantedAt).toBeLessThanOrEqual(1_000 / Q + 0.01);
    }
    // The refreshes a forced update moved one slot on kept the pace: no two starts within 1/Q.
    const all = [...refreshes, ...asks.map((a) => a.start)].sort((x, y) => x - y);
    expect(Math.min(...all.slice(1).map((t, i) => t - all[i]!))).toBeGreaterThan(1_000 / Q - 0.01);
    expect(refreshes.length).toBeGreaterThan(20);
  });
});
