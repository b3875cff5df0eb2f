import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertDue, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { planCountry } from '../../src/scheduling/planner.js';
import type { Country } from '../../src/core/identifiers.js';
import { asins, jobOutcomes, metric, until } from './helpers.js';

/**
 * The upstream starts refusing JP mid-run (the simulator's `refused` account state: every JP call
 * answered 429 naming no quota, which no pace fixes), against the real workers, planner and api.
 * Short settings stand in for the defaults: a 1.5 s window of 429s (30 s), a first probe after
 * 1 s doubling to at most 4 s (5 s, 2 min). Must hold:
 * - JP's breaker opens within a minute (here: the window and a few calls), with one log line, the
 *   metric, /readyz's details (still 200) and JP's queues paused; US is untouched;
 * - while it is open, at most one JP call reaches the upstream per backoff interval (plus the calls
 *   already on the wire when it opened), and US keeps its full pace;
 * - a forced update of JP answers 503 with Retry-After in under 100 ms;
 * - once JP is served again, its breaker closes at the next probe and every planned JP product is
 *   refreshed: nothing lost, no job failed.
 */
const RPS = 5;
const PROBE_MS = 1_000;
const PROBE_MAX_MS = 4_000;
const BATCHES = 60;
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({
    COUNTRIES: 'JP,US',
    QUOTA_RPS: String(RPS),
    SIMULATOR_QUOTA_RPS: String(RPS),
    UPSTREAM_BREAKER_WINDOW: '1500ms',
    UPSTREAM_BREAKER_PROBE: `${PROBE_MS}ms`,
    UPSTREAM_BREAKER_PROBE_MAX: `${PROBE_MAX_MS}ms`,
  });
});
afterAll(async () => {
  p?.sim.faults.reset();
  await p?.close();
});

const calls = (country: Country): number => p.sim.stats().countries[country]?.getItems?.calls ?? 0;
const breaker = (country: Country) => p.ctx.breakers.status(country);

/** The most probes a backoff starting at PROBE_MS, doubling up to PROBE_MAX_MS, allows within `ms`. */
function probesWithin(ms: number): number {
  let n = 0;
  for (let at = 0, wait = PROBE_MS; at + wait <= ms; n++, at += wait, wait = Math.min(PROBE_MAX_MS, wait * 2));
  return n;
}

describe('an upstream that refuses a country', () => {
  it(
    'opens the country breaker, keeps the others at pace, answers forced updates at once and resumes when served again',
    { timeout: 90_000 },
    async () => {
      const jpList = asins('B0REFJP', BATCHES * 10);
      const usList = asins('B0REFUS', BATCHES * 10);
      await insertDue(p.ctx.mongo, jpList, { country: 'JP' });
      await insertDue(p.ctx.mongo, usList, { country: 'US' });
      const user = await p.user('refused@example.com');
      const failed0 = await jobOutcomes(p.ctx.metrics, 'failed');
      const jpPlanned = (await planCountry(p.planner, 'JP')).enqueued.batches;
      const usPlanned = (await planCountry(p.planner, 'US')).enqueued.batches;
      expect(jpPlanned).toBeGreaterThan(10);
      expect(usPlanned).toBeGreaterThan(10);

      // JP works, then its account is refused there.
      await until('JP calls go out', async () => calls('JP') >= 5, 20_000, 20);
      const refusedAt = Date.now();
      p.sim.faults.update({ refused: ['JP'] });
      const open = await until(
        "JP's breaker is open",
        async () => {
          const b = await breaker('JP');
          return b.state === 'open' ? b : undefined;
        },
        60_000,
        20,
      );
      const openedAt = Date.now();
      expect(openedAt - refusedAt).toBeLessThan(60_000);
      expect(open).toMatchObject({ state: 'open', kind: 'throttled' });
      expect(await breaker('US')).toEqual({ state: 'closed' });
      await until('JP paused', () => p.ctx.jobs.queue('JP').isPaused(), 5_000, 20);
      expect(await p.ctx.jobs.queue('US').isPaused()).toBe(false);

      // Seen by an operator: one log line, the metric, /readyz (still ready).
      const openLines = p.logs.lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.country === 'JP' && l.breaker === 'open');
      expect(openLines).toHaveLength(1);
      expect(String(openLines[0]!.msg)).toContain('upstream refusing JP');
      expect(metric((await p.http.get('/metrics')).text, 'shelfwatch_upstream_breaker_open', { country: 'JP' })).toBe(1);
      expect(metric((await p.http.get('/metrics')).text, 'shelfwatch_upstream_breaker_open', { country: 'US' })).toBe(0);
      const ready = await p.http.get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.upstream).toMatchObject({ JP: { state: 'open', kind: 'throttled' }, US: { state: 'closed' } });

      // A forced update of JP is refused at once, with when to ask again.
      // The first answer of an operation also builds the test's OpenAPI check of it: time the second.
      await p.http.get(`/api/world/update?country=JP&asin=${jpList[1]}`).set(user.headers).expect(503);
      // This process also runs the workers: JP's jobs in flight when it opened are put back first.
      await until('JP has no job running', async () => (await p.ctx.jobs.queue('JP').getActiveCount()) === 0, 10_000, 20);
      const timings: number[] = [];
      for (const asin of jpList.slice(0, 3)) {
        const t = performance.now();
        const forced = await p.http.get(`/api/world/update?country=JP&asin=${asin}`).set(user.headers);
        timings.push(performance.now() - t);
        expect(forced.status).toBe(503);
        expect(Number(forced.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(forced.body.message).toContain('The upstream is refusing JP');
      }
      expect(timings.sort((a, b) => a - b)[1]).toBeLessThan(100);

      // While it is open: JP's calls are its probes only, US keeps its pace.
      const jpAtOpen = calls('JP');
      const usAtOpen = calls('US');
      const watchMs = 7_000;
      await until('a while open', async () => Date.now() - openedAt >= watchMs, watchMs + 5_000, 50);
      const openMs = Date.now() - openedAt;
      // The calls on the wire when it opened (one per worker slot at most in a second) come back too.
      expect(calls('JP') - jpAtOpen).toBeLessThanOrEqual(probesWithin(openMs) + 1);
      expect(calls('JP') - jpAtOpen).toBeGreaterThanOrEqual(probesWithin(openMs) - 1);
      expect((calls('US') - usAtOpen) / (openMs / 1_000)).toBeGreaterThanOrEqual(0.85 * RPS);
      expect((await breaker('JP')).state).toBe('open');

      // JP is served again: the next probe closes the breaker, its queues resume, nothing is lost.
      const before = await breaker('JP');
      if (before.state !== 'open') throw new Error('JP closed before it was served');
      p.sim.faults.update({ refused: [] });
      const allowedAt = Date.now();
      await until('JP closed', async () => (await breaker('JP')).state === 'closed', PROBE_MAX_MS + 5_000, 20);
      // Within one probe interval of being served: at the probe that was due next.
      expect(Date.now() - allowedAt).toBeLessThanOrEqual(Math.max(0, before.probeAt - allowedAt) + 1_000);
      expect(Date.now() - allowedAt).toBeLessThanOrEqual(PROBE_MAX_MS + 1_000);
      // The queues resume, then the one log line of the change is written.
      const closedLines = () => p.logs.lines.filter((l) => l.includes('"breaker":"closed"') && l.includes('"country":"JP"'));
      await until('the closing is logged', async () => closedLines().length > 0, 5_000, 20);
      expect(closedLines()).toHaveLength(1);
      expect(await p.ctx.jobs.queue('JP').isPaused()).toBe(false);

      // What the first plans left for later (the planner spreads a backlog) is planned as the scheduler would.
      await planCountry(p.planner, 'JP');
      await planCountry(p.planner, 'US');
      const products = productModel(p.ctx.mongo);
      const unrefreshed = (country: Country, list: string[]) =>
        products.countDocuments({ country, asin: mongoose.trusted({ $in: list }), last_attempt_at: null });
      await until(
        'every planned product refreshed',
        async () => (await unrefreshed('JP', jpList)) + (await unrefreshed('US', usList)) === 0,
        60_000,
        200,
      );
      expect(await jobOutcomes(p.ctx.metrics, 'failed')).toBe(failed0);
    },
  );
});
