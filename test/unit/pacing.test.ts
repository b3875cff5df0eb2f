import { classShares } from '../../src/core/quota-classes.js';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { sustainableRate } from '../../src/scheduling/planner.js';
import type { Country } from '../../src/core/identifiers.js';
import type { DailyUsage, DayCount } from '../../src/quota/daily-usage.js';
import { QuotaGovernor, type GovernedQuota } from '../../src/quota/governor.js';
import type { DayStatus } from '../../src/quota/governor-day.js';
import { dayLeftFraction, quotaDayOf, type QuotaDay } from '../../src/quota/quota-day.js';
import { countryTag } from '../../src/db/redis-keys.js';

/**
 * The quota's arithmetic that runs without Redis: the quota day (src/quota/quota-day.ts), the
 * day's limits the governor derives from it (QuotaGovernor.day, here over a fake Redis that only
 * answers HMGET) and the planner's sustainable rate. The pace itself (GCRA, booking ahead) lives
 * in the Lua of src/quota/governor-scripts.ts and is tested on a real Redis (test/quota).
 */

const H = 3_600_000;
const at = (iso: string): number => Date.parse(iso);

describe('quotaDayOf', () => {
  it('UTC: the calendar day, midnight to midnight', () => {
    expect(quotaDayOf(at('2026-03-04T15:06:07.890Z'), 'UTC')).toEqual({
      key: '2026-03-04',
      start: at('2026-03-04T00:00:00Z'),
      end: at('2026-03-05T00:00:00Z'),
    });
  });

  it('Asia/Tokyo (UTC+9): the day turns at 15:00 UTC', () => {
    expect(quotaDayOf(at('2026-03-04T14:59:59.999Z'), 'Asia/Tokyo')).toEqual({
      key: '2026-03-04',
      start: at('2026-03-03T15:00:00Z'),
      end: at('2026-03-04T15:00:00Z'),
    });
    expect(quotaDayOf(at('2026-03-04T15:00:00Z'), 'Asia/Tokyo')).toEqual({
      key: '2026-03-05',
      start: at('2026-03-04T15:00:00Z'),
      end: at('2026-03-05T15:00:00Z'),
    });
  });

  it('names the day in the zone, not in UTC, across a month and a year end', () => {
    expect(quotaDayOf(at('2026-02-28T15:00:00Z'), 'Asia/Tokyo').key).toBe('2026-03-01');
    expect(quotaDayOf(at('2026-12-31T15:00:00Z'), 'Asia/Tokyo').key).toBe('2027-01-01');
    expect(quotaDayOf(at('2027-01-01T04:59:59Z'), 'America/New_York').key).toBe('2026-12-31');
    expect(quotaDayOf(at('2028-02-29T12:00:00Z'), 'UTC').key).toBe('2028-02-29');
  });

  it('answers the day it found last from memory while `at` is in it, and finds the next afresh', () => {
    const day = quotaDayOf(at('2026-11-01T12:00:00Z'), 'America/New_York');
    expect(quotaDayOf(at('2026-11-01T20:00:00Z'), 'America/New_York')).toBe(day);
    // The day the clocks go back is 25 hours long in the zone.
    expect(day.end - day.start).toBe(25 * H);
    const next = quotaDayOf(day.end, 'America/New_York');
    expect(next).toEqual({ key: '2026-11-02', start: day.end, end: day.end + 24 * H });
    expect(quotaDayOf(day.start, 'America/New_York')).toEqual(day);
  });

  it('holds its own start and not its end: start ≤ at < end', () => {
    const day = quotaDayOf(at('2026-07-01T12:00:00Z'), 'America/New_York');
    expect(quotaDayOf(day.start, 'America/New_York')).toEqual(day);
    expect(quotaDayOf(day.end - 1, 'America/New_York')).toEqual(day);
    expect(quotaDayOf(day.end, 'America/New_York').key).toBe('2026-07-02');
    expect(quotaDayOf(day.start - 1, 'America/New_York').key).toBe('2026-06-30');
  });

  describe('America/New_York on its DST change days', () => {
    const tz = 'America/New_York';

    it('spring forward (2026-03-08) is a 23-hour day from 05:00 UTC (EST) to 04:00 UTC the next day (EDT)', () => {
      const day = quotaDayOf(at('2026-03-08T12:00:00Z'), tz);
      expect(day).toEqual({ key: '2026-03-08', start: at('2026-03-08T05:00:00Z'), end: at('2026-03-09T04:00:00Z') });
      expect(day.end - day.start).toBe(23 * H);
      // 01:59:59 EST and 03:00 EDT, either side of the skipped hour, are the same day.
      expect(quotaDayOf(at('2026-03-08T06:59:59Z'), tz)).toEqual(day);
      expect(quotaDayOf(at('2026-03-08T07:00:00Z'), tz)).toEqual(day);
      expect(quotaDayOf(at('2026-03-09T03:59:59.999Z'), tz)).toEqual(day);
      expect(quotaDayOf(at('2026-03-09T04:00:00Z'), tz)).toEqual({
        key: '2026-03-09',
        start: at('2026-03-09T04:00:00Z'),
        end: at('2026-03-10T04:00:00Z'),
      });
    });

    it('fall back (2026-11-01) is a 25-hour day from 04:00 UTC (EDT) to 05:00 UTC the next day (EST)', () => {
      const day = quotaDayOf(at('2026-11-01T12:00:00Z'), tz);
      expect(day).toEqual({ key: '2026-11-01', start: at('2026-11-01T04:00:00Z'), end: at('2026-11-02T05:00:00Z') });
      expect(day.end - day.start).toBe(25 * H);
      // 01:30 EDT and 01:30 EST, the hour the clock shows twice, are the same day.
      expect(quotaDayOf(at('2026-11-01T05:30:00Z'), tz)).toEqual(day);
      expect(quotaDayOf(at('2026-11-01T06:30:00Z'), tz)).toEqual(day);
      expect(quotaDayOf(at('2026-11-01T03:59:59.999Z'), tz).key).toBe('2026-10-31');
    });
  });

  it('zones with half- and quarter-hour offsets (Kolkata, Kathmandu, Chatham) and a half-hour DST shift (Lord Howe)', () => {
    expect(quotaDayOf(at('2026-03-04T18:29:59Z'), 'Asia/Kolkata')).toEqual({
      key: '2026-03-04',
      start: at('2026-03-03T18:30:00Z'),
      end: at('2026-03-04T18:30:00Z'),
    });
    expect(quotaDayOf(at('2026-09-26T18:15:00Z'), 'Asia/Kathmandu')).toEqual({
      key: '2026-09-27',
      start: at('2026-09-26T18:15:00Z'),
      end: at('2026-09-27T18:15:00Z'),
    });
    // Chatham goes from +12:45 to +13:45 at 02:45 local on 2026-09-27.
    const chatham = quotaDayOf(at('2026-09-27T00:00:00Z'), 'Pacific/Chatham');
    expect(chatham).toEqual({ key: '2026-09-27', start: at('2026-09-26T11:15:00Z'), end: at('2026-09-27T10:15:00Z') });
    // Lord Howe goes from +10:30 to +11 at 02:00 local on 2026-10-04: a 23.5-hour day.
    const lordHowe = quotaDayOf(at('2026-10-04T00:00:00Z'), 'Australia/Lord_Howe');
    expect(lordHowe).toEqual({ key: '2026-10-04', start: at('2026-10-03T13:30:00Z'), end: at('2026-10-04T13:00:00Z') });
  });

  describe('for any instant (property)', () => {
    const zones = [
      'UTC',
      'Asia/Tokyo',
      'America/New_York',
      'America/Los_Angeles',
      'Europe/London',
      'Europe/Berlin',
      'Australia/Sydney',
      'Australia/Lord_Howe',
      'Asia/Kolkata',
      'Asia/Kathmandu',
      'Pacific/Chatham',
      'America/St_Johns',
      'Pacific/Kiritimati',
      'Pacific/Pago_Pago',
      'America/Santiago',
      'America/Havana',
    ];
    const instant = fc.integer({ min: at('2000-01-01T00:00:00Z'), max: at('2040-01-01T00:00:00Z') });
    const zone = fc.constantFrom(...zones);
    const dates = new Map(
      zones.map((tz) => [tz, new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' })]),
    );
    /** The zone's calendar date of `t`, as YYYY-MM-DD (en-CA), by Intl rather than by quota-day.ts. */
    const dateIn = (t: number, tz: string): string => dates.get(tz)!.format(t);

    it('start ≤ at < end, the day lasts 23 to 25 hours, and its key is the zone’s calendar date of `at` and of its start', () => {
      fc.assert(
        fc.property(instant, zone, (t, tz) => {
          const day = quotaDayOf(t, tz);
          expect(day.start).toBeLessThanOrEqual(t);
          expect(day.end).toBeGreaterThan(t);
          expect(day.end - day.start).toBeGreaterThanOrEqual(23 * H);
          expect(day.end - day.start).toBeLessThanOrEqual(25 * H);
          expect(day.key).toBe(dateIn(t, tz));
          expect(day.key).toBe(dateIn(day.start, tz));
          expect(dateIn(day.start - 1, tz)).not.toBe(day.key);
        }),
        { numRuns: 400 },
      );
    });

    it('days tile time: the next day starts where this one ends, the previous one ends where it starts', () => {
      fc.assert(
        fc.property(instant, zone, (t, tz) => {
          const day = quotaDayOf(t, tz);
          expect(quotaDayOf(day.end, tz).start).toBe(day.end);
          expect(quotaDayOf(day.start - 1, tz).end).toBe(day.start);
        }),
        { numRuns: 400 },
      );
    });
  });

  // In a zone whose DST starts at midnight no instant shows 00:00 on that day: the day before must
  // still end where the next begins, or its last hour would read as a day already over.
  it.each([
    // Santiago: 2026-09-05 24:00 (-04) becomes 2026-09-06 01:00 (-03), at 04:00 UTC.
    ['America/Santiago', '2026-09-06T03:30:00Z', '2026-09-05', '2026-09-06T04:00:00Z'],
    // Havana: 2026-03-08 00:00 (-05) becomes 01:00 (-04), at 05:00 UTC.
    ['America/Havana', '2026-03-08T04:30:00Z', '2026-03-07', '2026-03-08T05:00:00Z'],
  ])('%s: the day before a midnight DST change ends when the next day begins (start ≤ at < end)', (tz, iso, key, nextStart) => {
    const t = at(iso);
    const day = quotaDayOf(t, tz);
    expect(day.key).toBe(key);
    expect(day.start).toBeLessThanOrEqual(t);
    expect(day.end).toBe(at(nextStart));
    expect(day.end).toBeGreaterThan(t);
  });
});

describe('dayLeftFraction', () => {
  const utcDay = quotaDayOf(at('2026-03-04T12:00:00Z'), 'UTC');

  it('is 1 at the day’s start, 0 at its end, and the share of real time left in between', () => {
    expect(dayLeftFraction(utcDay, utcDay.start)).toBe(1);
    expect(dayLeftFraction(utcDay, utcDay.end)).toBe(0);
    expect(dayLeftFraction(utcDay, utcDay.start + 6 * H)).toBe(0.75);
    expect(dayLeftFraction(utcDay, utcDay.start + 18 * H)).toBe(0.25);
  });

  it('stays within [0, 1] for instants outside the day', () => {
    expect(dayLeftFraction(utcDay, utcDay.start - H)).toBe(1);
    expect(dayLeftFraction(utcDay, utcDay.end + H)).toBe(0);
  });

  it('counts real hours on a 23-hour DST day: at 12:00 local 12 of 23 hours are left; half the day is 11.5 hours', () => {
    const day = quotaDayOf(at('2026-03-08T12:00:00Z'), 'America/New_York');
    // 12:00 EDT is 16:00 UTC, 11 real hours after the day's start.
    expect(dayLeftFraction(day, at('2026-03-08T16:00:00Z'))).toBeCloseTo(12 / 23, 12);
    expect(dayLeftFraction(day, day.start + 11.5 * H)).toBe(0.5);
  });

  it('counts real hours on a 25-hour DST day', () => {
    const day = quotaDayOf(at('2026-11-01T12:00:00Z'), 'America/New_York');
    expect(dayLeftFraction(day, day.start + 12.5 * H)).toBe(0.5);
    expect(dayLeftFraction(day, day.start + 5 * H)).toBe(0.8);
  });
});

/** A Redis that answers only the HMGET of the day's hash, and says which key it was asked. */
function fakeRedis(day: { total?: string; od?: string; spent?: string; wait_ms?: string } | null) {
  const asked: { key: string; fields: string[] }[] = [];
  const redis = {
    async hmget(key: string, ...fields: string[]): Promise<(string | null)[]> {
      asked.push({ key, fields });
      return fields.map((f) => day?.[f as keyof typeof day] ?? null);
    },
  };
  return { redis: redis as unknown as Redis, asked };
}

/** The MongoDB copy of the day's count, in memory. */
function fakeUsage(copy: DayCount = { calls: 0, forced: 0, imports: 0, crawls: 0 }) {
  const reads: { country: Country; day: string }[] = [];
  const usage = {
    async read(country: Country, day: string): Promise<DayCount> {
      reads.push({ country, day });
      return copy;
    },
    record(): void {
      throw new Error('day() must not record a call');
    },
  };
  return { usage: usage as unknown as DailyUsage, reads };
}

function governor(
  redis: Redis,
  usage: DailyUsage,
  opts: { tz?: string; quota?: Partial<GovernedQuota>; share?: number; reserve?: number } = {},
): QuotaGovernor {
  return new QuotaGovernor(redis, 'pfx', {
    quotas: { JP: { perSecond: 2, burst: 1, perDay: 8_000, ...opts.quota } },
    dayTimeZone: opts.tz ?? 'UTC',
    shares: classShares({ forced: opts.share ?? 0.25 }),
    forcedReserve: opts.reserve ?? 0.5,
    usage,
    clock: () => {
      throw new Error('day(country, at) must use the instant it is given');
    },
  });
}

describe('QuotaGovernor.day: the day’s limits (TypeScript arithmetic, Redis faked)', () => {
  it('reads the count of the zone’s day, named by its key, from the day’s hash', async () => {
    const { redis, asked } = fakeRedis({ total: '100', od: '10' });
    const g = governor(redis, fakeUsage().usage, { tz: 'Asia/Tokyo' });
    const status = await g.day('JP', at('2026-03-04T15:30:00Z'));
    expect(asked).toEqual([
      { key: `${countryTag('pfx', 'JP')}:gov:day:2026-03-05`, fields: ['total', 'od', 'im', 'cr', 'spent', 'wait_ms'] },
    ]);
    expect(status.day).toEqual(quotaDayOf(at('2026-03-04T15:30:00Z'), 'Asia/Tokyo'));
    expect(status).toMatchObject({ country: 'JP', limit: 8_000, used: 100, forcedUsed: 10, spent: false });
  });

  it('the reserve for forced updates shrinks with the day: scheduled work may spend perDay − ⌈perDay·reserve·left⌉', async () => {
    const { redis } = fakeRedis({ total: '0', od: '0' });
    const g = governor(redis, fakeUsage().usage);
    const start = at('2026-03-04T00:00:00Z');
    // perDay 8000, reserve 0.5: 4000 calls kept at midnight, 3000 at 06:00, 1000 at 18:00.
    expect((await g.day('JP', start)).scheduledLimit).toBe(4_000);
    expect((await g.day('JP', start + 6 * H)).scheduledLimit).toBe(5_000);
    expect((await g.day('JP', start + 18 * H)).scheduledLimit).toBe(7_000);
    // A sliver of the day left still keeps one call (rounded up), never a fraction.
    expect((await g.day('JP', start + 24 * H - 1)).scheduledLimit).toBe(7_999);
  });

  it('the reserve follows real hours on a 23-hour DST day', async () => {
    const { redis } = fakeRedis({ total: '0', od: '0' });
    const g = governor(redis, fakeUsage().usage, { tz: 'America/New_York' });
    const day = quotaDayOf(at('2026-03-08T12:00:00Z'), 'America/New_York');
    // A quarter of the 23 hours gone (5.75 h): three quarters of the reserve kept.
    expect((await g.day('JP', day.start + 5.75 * H)).scheduledLimit).toBe(8_000 - 3_000);
  });

  it('the forced-update limit is ⌊perDay·share⌋ all day', async () => {
    const { redis } = fakeRedis({ total: '0', od: '0' });
    const g = governor(redis, fakeUsage().usage, { quota: { perDay: 8_641 }, share: 0.25 });
    expect((await g.day('JP', at('2026-03-04T00:00:00Z'))).forcedLimit).toBe(2_160);
    expect((await g.day('JP', at('2026-03-04T23:00:00Z'))).forcedLimit).toBe(2_160);
  });

  it('no reserve: scheduled work may spend the whole day', async () => {
    const { redis } = fakeRedis({ total: '0', od: '0' });
    const g = governor(redis, fakeUsage().usage, { reserve: 0 });
    expect((await g.day('JP', at('2026-03-04T00:00:00Z'))).scheduledLimit).toBe(8_000);
  });

  it('says the day is spent when the upstream said so, and the mean wait per call', async () => {
    const { redis } = fakeRedis({ total: '40', od: '4', spent: '1', wait_ms: '1000' });
    const status = await governor(redis, fakeUsage().usage).day('JP', at('2026-03-04T12:00:00Z'));
    expect(status).toMatchObject({ used: 40, forcedUsed: 4, spent: true, meanWaitMs: 25 });
  });

  it('starts from the MongoDB copy of the day (read by the day’s key) when Redis has no count', async () => {
    const { redis } = fakeRedis(null);
    const { usage, reads } = fakeUsage({ calls: 321, forced: 21, imports: 0, crawls: 0 });
    const status = await governor(redis, usage, { tz: 'Asia/Tokyo' }).day('JP', at('2026-03-04T15:30:00Z'));
    expect(reads).toEqual([{ country: 'JP', day: '2026-03-05' }]);
    expect(status).toMatchObject({ used: 321, forcedUsed: 21, spent: false, meanWaitMs: 0 });
  });

  it('does not read the MongoDB copy while Redis has the count', async () => {
    const { redis } = fakeRedis({ total: '0' });
    const { usage, reads } = fakeUsage({ calls: 999, forced: 9, imports: 0, crawls: 0 });
    const status = await governor(redis, usage).day('JP', at('2026-03-04T12:00:00Z'));
    expect(reads).toEqual([]);
    expect(status).toMatchObject({ used: 0, forcedUsed: 0 });
  });

  it('intervalMs is 1/Q; a country without a quota is refused', async () => {
    const { redis } = fakeRedis(null);
    expect(governor(redis, fakeUsage().usage, { quota: { perSecond: 2 } }).intervalMs('JP')).toBe(500);
    expect(governor(redis, fakeUsage().usage, { quota: { perSecond: 0.5 } }).intervalMs('JP')).toBe(2_000);
    expect(() => governor(redis, fakeUsage().usage).intervalMs('US')).toThrow(/no quota configured for US/);
    await expect(governor(redis, fakeUsage().usage).day('US', 0)).rejects.toThrow(/no quota configured for US/);
  });
});

/** A governor that only knows the day: what sustainableRate reads. */
function dayOnly(status: Partial<DayStatus> & { end: number }) {
  const asked: { country: Country; at: number | undefined }[] = [];
  const quota = {
    async day(country: Country, atMs?: number): Promise<DayStatus> {
      asked.push({ country, at: atMs });
      return {
        country,
        day: { key: 'k', start: status.end - 24 * H, end: status.end } satisfies QuotaDay,
        limit: 100_000,
        used: 0,
        forcedUsed: 0,
        scheduledLimit: 100_000,
        forcedLimit: 25_000,
        classes: { forced: { used: 0, limit: 25_000 }, import: { used: 0, limit: 10_000 }, crawl: { used: 0, limit: 10_000 } },
        spent: false,
        meanWaitMs: 0,
        ...status,
      };
    },
  };
  return { quota: quota as unknown as QuotaGovernor, asked };
}

describe('sustainableRate (src/scheduling/planner.ts)', () => {
  // Far from the machine's clock: a rate computed from Date.now() would be far off.
  const now = new Date('2031-05-06T07:08:09Z');
  const t = now.getTime();

  it('spreads what scheduled work may still spend evenly over the seconds left in the day', async () => {
    const { quota, asked } = dayOnly({ end: t + 10_000_000, scheduledLimit: 50_000, used: 20_000 });
    expect(await sustainableRate(quota, 5, 'US', now)).toBe(3);
    expect(asked).toEqual([{ country: 'US', at: t }]);
  });

  it('never exceeds the pace Q', async () => {
    const { quota } = dayOnly({ end: t + 1_000_000, scheduledLimit: 50_000, used: 0 });
    expect(await sustainableRate(quota, 2, 'JP', now)).toBe(2);
  });

  it('is 0 once the upstream said the day is spent, whatever the count says', async () => {
    const { quota } = dayOnly({ end: t + 1_000_000, scheduledLimit: 50_000, used: 10, spent: true });
    expect(await sustainableRate(quota, 2, 'JP', now)).toBe(0);
  });

  it('is 0, not negative, once scheduled work has spent its limit (forced updates took the rest)', async () => {
    expect(await sustainableRate(dayOnly({ end: t + 1_000_000, scheduledLimit: 50_000, used: 50_000 }).quota, 2, 'JP', now)).toBe(0);
    expect(await sustainableRate(dayOnly({ end: t + 1_000_000, scheduledLimit: 50_000, used: 60_000 }).quota, 2, 'JP', now)).toBe(0);
  });

  it('spreads the rest over at least one second at the very end of the day (no division by a sliver)', async () => {
    const { quota } = dayOnly({ end: t + 200, scheduledLimit: 50_000, used: 49_997 });
    expect(await sustainableRate(quota, 10, 'JP', now)).toBe(3);
  });

  it('with the governor’s own day (Redis faked): the reserve shrinks as the day goes, so the rate is (perDay − reserve − used) / seconds left', async () => {
    const { redis } = fakeRedis({ total: '10000', od: '0' });
    const g = new QuotaGovernor(redis, 'pfx', {
      quotas: { JP: { perSecond: 2, burst: 1, perDay: 86_400 } },
      dayTimeZone: 'UTC',
      shares: classShares({ forced: 0.3 }),
      forcedReserve: 0.1,
      usage: fakeUsage().usage,
    });
    // 06:00 UTC: 3/4 of the day left, reserve ⌈86 400 · 0.1 · 0.75⌉ = 6 480, 64 800 s to go.
    const rate = await sustainableRate(g, 2, 'JP', new Date('2026-03-04T06:00:00Z'));
    expect(rate).toBeCloseTo((86_400 - 6_480 - 10_000) / 64_800, 12);
  });
});
