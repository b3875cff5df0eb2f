import { classShares } from '../../src/core/quota-classes.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inject } from 'vitest';
import { Redis } from 'ioredis';
import { QuotaGovernor } from '../../src/quota/governor.js';
import { governPort, isDailyQuota } from '../../src/quota/governed-port.js';
import {
  DayQuotaSpentError,
  UpstreamAuthError,
  UpstreamNotEligibleError,
  UpstreamRateLimitedError,
  UpstreamRefusingError,
} from '../../src/core/errors.js';
import { createPermitScopes, type PermitScope } from '../../src/quota/permit-scope.js';
import { testBreakers } from '../helpers/breakers.js';
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

  const deps = (g: QuotaGovernor, options = {}) => ({ governor: g, ...testBreakers(redis, prefix, options) });

  it('holds the country for one interval (1/Q) when the 429 says nothing, and tries again', async () => {
    const g = governor();
    const hold = vi.spyOn(g, 'hold');
    const port = governPort(portThrowing([new UpstreamRateLimitedError('JP', 1_000, 'RequestsPerSecond')]), 'JP', deps(g));
    await port.getItems(['B0TEST0001']);
    expect(hold).toHaveBeenCalledWith('JP', 200);
    g.close();
  });

  it('honours a Retry-After the 429 gave, however long', async () => {
    const g = governor();
    const hold = vi.spyOn(g, 'hold').mockResolvedValue();
    const port = governPort(portThrowing([new UpstreamRateLimitedError('JP', 3_000, 'RequestsPerSecond', true)]), 'JP', deps(g));
    await port.getItems(['B0TEST0001']);
    expect(hold).toHaveBeenCalledWith('JP', 3_000);
    g.close();
  });

  it('gives up after three throttled tries: the job decides what comes next', async () => {
    const g = governor();
    const port = governPort(
      portThrowing(Array.from({ length: 3 }, () => new UpstreamRateLimitedError('JP', 50, 'RequestsPerSecond'))),
      'JP',
      deps(g),
    );
    await expect(port.getItems(['B0TEST0001'])).rejects.toBeInstanceOf(UpstreamRateLimitedError);
    g.close();
  });

  it('a daily 429 marks the day spent for every process and fails as DayQuotaSpentError', async () => {
    const g = governor();
    const port = governPort(portThrowing([new UpstreamRateLimitedError('JP', 1_000, 'RequestsPerDay')]), 'JP', deps(g));
    await expect(port.getItems(['B0TEST0001'])).rejects.toBeInstanceOf(DayQuotaSpentError);
    expect((await g.day('JP')).spent).toBe(true);
    await expect(g.permit('JP', 'forced')).rejects.toBeInstanceOf(DayQuotaSpentError);
    g.close();
  });

  it('a 429 soon after its slot grows the margin and sends the retry ahead of the line', async () => {
    await dropKeys(redis, prefix);
    const g = governor();
    vi.spyOn(g, 'hold').mockResolvedValue();
    const scopes = createPermitScopes();
    const port = governPort(portThrowing([new UpstreamRateLimitedError('JP', 200, 'RequestsPerSecond')]), 'JP', { ...deps(g), scopes });
    const scope: PermitScope = {
      cls: 'refresh',
      rank: 5,
      signal: new AbortController().signal,
      state: { waiting: false, started: true, sentAt: performance.now() },
    };
    await scopes.run(scope, () => port.getItems(['B0TEST0001']));
    // One step of the controller at Q = 5 (1 % of 200 ms) on top of the least margin (0.2 ms).
    expect(await g.marginMs('JP')).toBeCloseTo(2.2, 1);
    expect(scope.state.retry).toBe(true);
    g.close();
  });

  it('a credential or eligibility error opens the breaker at once: the call fails as UpstreamRefusingError, the queues pause', async () => {
    await dropKeys(redis, prefix);
    const g = governor();
    const { breakers, queues } = testBreakers(redis, prefix);
    const port = governPort(portThrowing([new UpstreamNotEligibleError('JP', 'AssociateNotEligible', 'not eligible')]), 'JP', {
      governor: g,
      breakers,
    });
    const err = await port.getItems(['B0TEST0001']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamRefusingError);
    expect((err as UpstreamRefusingError).retryAfterMs).toBeGreaterThanOrEqual(4_000);
    expect(await breakers.status('JP')).toMatchObject({ state: 'open', kind: 'eligibility', reason: 'AssociateNotEligible' });
    expect([...queues.paused].sort()).toEqual(['JP:crawl', 'JP:forced', 'JP:import', 'JP:refresh']);
    // Every permit of the country is refused while it is open, in this process and any other.
    await expect(g.permit('JP', 'refresh')).rejects.toBeInstanceOf(UpstreamRefusingError);
    // A probe closes it, and only the queues the breaker paused resume.
    expect(await breakers.close('JP')).toBe(true);
    expect(queues.paused.size).toBe(0);
    await g.permit('JP', 'refresh');
    g.close();
  });

  it("an operator's pause stays when the breaker closes", async () => {
    await dropKeys(redis, prefix);
    const g = governor();
    const { breakers, queues } = testBreakers(redis, prefix);
    queues.paused.add('JP:refresh');
    const port = governPort(portThrowing([new UpstreamAuthError('JP', 'InvalidToken', 'bad token')]), 'JP', { governor: g, breakers });
    await expect(port.getItems(['B0TEST0001'])).rejects.toBeInstanceOf(UpstreamRefusingError);
    expect(await breakers.status('JP')).toMatchObject({ state: 'open', kind: 'credential' });
    await breakers.close('JP');
    expect([...queues.paused]).toEqual(['JP:refresh']);
    g.close();
  });

  it('every call answered 429 for the window at a pace well under Q opens the breaker; a call that goes through ends the run', async () => {
    await dropKeys(redis, prefix);
    const g = governor();
    vi.spyOn(g, 'hold').mockResolvedValue();
    const { breakers } = testBreakers(redis, prefix, { windowMs: 300 });
    const throttled = () => new UpstreamRateLimitedError('JP', 1_000, undefined, true);
    const scopes = createPermitScopes();
    const call = (errors: Error[]) => {
      const port = governPort(portThrowing(errors), 'JP', { governor: g, breakers, scopes });
      const scope: PermitScope = {
        cls: 'refresh',
        rank: 5,
        signal: new AbortController().signal,
        state: { waiting: false, started: true, sentAt: performance.now() },
      };
      return scopes.run(scope, () => port.getItems(['B0TEST0001']));
    };
    // Two 429s then an answer: the run ends, however long it was.
    await call([throttled(), throttled()]);
    await new Promise((r) => setTimeout(r, 350));
    await call([throttled()]);
    expect(await breakers.status('JP')).toEqual({ state: 'closed' });
    // 429s only, three at once and one 800 ms later: longer than the window, and 4 calls in 800 ms
    // is under 0.8 Q (Q = 5): the upstream refuses the country.
    await expect(call([throttled(), throttled(), throttled()])).rejects.toBeInstanceOf(UpstreamRateLimitedError);
    expect(await breakers.status('JP')).toEqual({ state: 'closed' });
    await new Promise((r) => setTimeout(r, 800));
    const err = await call([throttled()]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamRefusingError);
    expect(await breakers.status('JP')).toMatchObject({ state: 'open', kind: 'throttled' });
    await breakers.close('JP');
    g.close();
  });
});
