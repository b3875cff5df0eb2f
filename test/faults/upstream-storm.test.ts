import mongoose from 'mongoose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { completions, startPipeline, type Pipeline, insertDue } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { planCountry } from '../../src/scheduling/planner.js';
import type { Country } from '../../src/core/identifiers.js';
import { asins, jobOutcomes, metric, until } from './helpers.js';

/**
 * Upstream storms against the real workers and the simulator over HTTP (faults set through the
 * simulator's fault injector, calls counted from its /__stats counters). Both countries have a
 * quota of 5 calls a second, enforced by the quota governor and by the simulator.
 *
 * - 30 % 500s and 10 % timeouts: must hold: failed calls are retried with backoff, never faster
 *   than the quota; no job fails for good; every product is written.
 * - a burst of 429s with Retry-After: 1: must hold: each 429 holds the country's pace for one
 *   interval (1/Q, not the whole second) and the call is tried again; nothing fails.
 * - invalid token on every call (a revoked credential, the Creators API's bad-signature case), then
 *   eligibility lost for US: must hold: that country's breaker opens, its queues pause with one
 *   error log line and shelfwatch_upstream_breaker_open{country} = 1; only its probes reach the
 *   upstream (no crash loop), the other country keeps working, nothing fails, and once the
 *   upstream serves the country again a probe closes the breaker and the held work is done.
 */
const RPS = 5;
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({
    COUNTRIES: 'JP,US',
    QUOTA_RPS: String(RPS),
    SIMULATOR_QUOTA_RPS: String(RPS),
    CREATORS_TIMEOUT_MS: '800',
    UPSTREAM_BREAKER_PROBE: '500ms',
    UPSTREAM_BREAKER_PROBE_MAX: '2s',
  });
});
afterAll(async () => {
  await p?.close();
});
// A test that fails mid-storm must not leave the storm on for the next one.
afterEach(() => {
  p?.sim.faults.reset();
});

const products = () => productModel(p.ctx.mongo);
async function due(country: Country, prefix: string, n: number): Promise<string[]> {
  const list = asins(prefix, n);
  await insertDue(p.ctx.mongo, list, { country });
  return list;
}
const calls = (country: Country): number => p.sim.stats().countries[country]?.getItems?.calls ?? 0;
const stat = (country: Country, what: 'errors' | 'throttled'): number => p.sim.stats().countries[country]?.getItems?.[what] ?? 0;
const jobs = (outcome: string): Promise<number> => jobOutcomes(p.ctx.metrics, outcome);
const unwritten = (country: Country, list: string[]): Promise<number> =>
  products().countDocuments({ country, asin: mongoose.trusted({ $in: list }), last_attempt_at: null });

describe('upstream storms', () => {
  // Each call fails with p = 0.3 + 0.7 × 0.1 = 0.37. With 30 batches the chance that fewer than
  // three calls fail before all succeed is about 1e-4 (negative binomial); with 8 it was 22 %,
  // which is how this test once failed in CI.
  const BATCHES = 30;
  it('30 % 5xx and 10 % timeouts: retried with backoff within the quota, nothing lost', { timeout: 80_000 }, async () => {
    const list = await due('JP', 'B0STORM', BATCHES * 10);
    p.sim.faults.update({ errorRate: 0.3, timeoutRate: 0.1 });
    const worker = p.workers.workers.get('JP')!;
    const allDone = completions(worker, BATCHES, 75_000);
    const c0 = calls('JP');
    const t0 = Date.now();
    expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBe(BATCHES);
    // The storm lasts until at least three calls failed and were put back for a retry.
    await until('the storm hit', async () => (await jobs('retry')) >= 3, 30_000, 100);
    const stormCalls = calls('JP') - c0;
    const stormS = (Date.now() - t0) / 1_000;
    expect(stat('JP', 'errors')).toBeGreaterThan(0);
    p.sim.faults.update({ errorRate: 0, timeoutRate: 0 });
    await allDone;
    const totalCalls = calls('JP') - c0;
    const totalS = (Date.now() - t0) / 1_000;
    // No tight loop: calls never outrun the quota (one extra for the window's edges), storm or not.
    expect(stormCalls).toBeLessThanOrEqual(Math.ceil(stormS * RPS) + 1);
    expect(totalCalls).toBeLessThanOrEqual(Math.ceil(totalS * RPS) + 1);
    // Retries happened and cost calls, but at most one call per attempt.
    expect(totalCalls).toBeGreaterThan(BATCHES);
    expect(totalCalls).toBeLessThanOrEqual(BATCHES + (await jobs('retry')));
    expect(await jobs('failed')).toBe(0);
    expect(await products().countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: null })).toBe(0);
  });

  it('a burst of 429s with Retry-After: each holds the pace for 1/Q and is tried again, nothing fails', { timeout: 40_000 }, async () => {
    const list = await due('JP', 'B0429', 40);
    const BURST = 4;
    p.sim.faults.update({ throttleBurst: BURST });
    const th0 = stat('JP', 'throttled');
    const c0 = calls('JP');
    const failed0 = await jobs('failed');
    const allDone = completions(p.workers.workers.get('JP')!, 4, 35_000);
    await planCountry(p.planner, 'JP');
    await until('the burst is spent', async () => stat('JP', 'throttled') - th0 >= BURST, 20_000, 50);
    const burstCalls = calls('JP') - c0;
    await allDone;
    expect(stat('JP', 'throttled') - th0).toBe(BURST);
    // The throttled calls are the burst's own: holding the pace after each one caused no other 429.
    expect(burstCalls).toBe(BURST);
    // Four batches: each call made once, plus one per 429 (the port tries again after the hold).
    expect(calls('JP') - c0).toBe(4 + BURST);
    expect(await jobs('failed')).toBe(failed0);
    expect(await products().countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: null })).toBe(0);
  });

  it(
    'a refused credential, then lost eligibility: that country stops with a log line and a metric, not a crash loop, and comes back by itself',
    { timeout: 60_000 },
    async () => {
      const jp = p.ctx.jobs.queue('JP');
      const us = p.ctx.jobs.queue('US');
      const failed0 = await jobs('failed');
      const tokens0 = p.sim.stats().tokens.issued;
      // A revoked credential (every catalog call of every country answers 401); only JP has work.
      p.sim.faults.update({ invalidTokenRate: 1 });
      const held = await due('JP', 'B0AUTH', 10);
      expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBe(1);
      // The breaker opens on the first refusal and pauses the country's queues; the job waits.
      await until('JP paused', () => jp.isPaused(), 10_000, 20);
      expect(await p.ctx.breakers.status('JP')).toMatchObject({ state: 'open', kind: 'credential', reason: 'InvalidToken' });
      // The token was renewed once on the first 401 and not again.
      expect(p.sim.stats().tokens.issued - tokens0).toBeLessThanOrEqual(2);
      const stopLines = p.logs.lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.country === 'JP' && l.breaker === 'open');
      expect(stopLines).toHaveLength(1);
      expect(stopLines[0]!.level).toBe(50);
      expect(String(stopLines[0]!.msg)).toContain('CREATORS_CREDENTIAL_ID_JP');
      expect(metric((await p.http.get('/metrics')).text, 'shelfwatch_upstream_breaker_open', { country: 'JP' })).toBe(1);
      // The credential works again: the next probe closes JP's breaker and the held job is done.
      p.sim.faults.update({ invalidTokenRate: 0 });
      await until('JP closed', async () => (await p.ctx.breakers.status('JP')).state === 'closed', 10_000, 20);
      await until('JP resumed', async () => !(await jp.isPaused()), 5_000, 20);
      await until('the held job is done', async () => (await unwritten('JP', held)) === 0, 20_000, 100);

      // Eligibility lost in US: the same stop, for US only.
      p.sim.faults.update({ notEligible: ['US'] });
      const usHeld = await due('US', 'B0ELIG', 10);
      expect((await planCountry(p.planner, 'US')).enqueued.batches).toBe(1);
      await until('US paused', () => us.isPaused(), 10_000, 20);
      expect(await p.ctx.breakers.status('US')).toMatchObject({ state: 'open', kind: 'eligibility', reason: 'AssociateNotEligible' });
      expect(metric((await p.http.get('/metrics')).text, 'shelfwatch_upstream_breaker_open', { country: 'US' })).toBe(1);
      expect(p.logs.lines.filter((l) => l.includes('"country":"US"') && l.includes('"breaker":"open"'))).toHaveLength(1);

      // While US is refused its work waits, the planner leaves the rest in MongoDB, and JP works.
      const usRest = await due('US', 'B0USWAIT', 20);
      const pausedPlan = await planCountry(p.planner, 'US');
      expect(pausedPlan.paused).toBe(true);
      expect(pausedPlan.enqueued.batches).toBe(0);
      const usCalls = calls('US');
      const probeStart = Date.now();
      const jpList = await due('JP', 'B0JPOK', 20);
      const jpDone = completions(p.workers.workers.get('JP')!, 2, 20_000);
      expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBe(2);
      await jpDone;
      expect(await unwritten('JP', jpList)).toBe(0);
      // No crash loop: US's calls are its probes, one per doubling wait (500 ms, then 1 s, 2 s, …).
      const probesMax = Math.floor(Math.log2((Date.now() - probeStart) / 500 + 1)) + 1;
      expect(calls('US') - usCalls).toBeLessThanOrEqual(probesMax);
      expect(p.workers.workers.get('US')!.isRunning()).toBe(true);

      // Eligible again: US's next probe closes its breaker, the held job is done, the planner takes the rest.
      p.sim.faults.update({ notEligible: [] });
      await until('US closed', async () => (await p.ctx.breakers.status('US')).state === 'closed', 10_000, 20);
      await until('US resumed', async () => !(await us.isPaused()), 5_000, 20);
      await until('the held US job is done', async () => (await unwritten('US', usHeld)) === 0, 20_000, 100);
      const usDone = completions(p.workers.workers.get('US')!, 2, 20_000);
      expect((await planCountry(p.planner, 'US')).enqueued.batches).toBe(2);
      await usDone;
      expect(await unwritten('US', usRest)).toBe(0);
      expect(await jobs('failed')).toBe(failed0);
    },
  );
});
