import { describe, expect, it } from 'vitest';
import { marginSteps, nextMargin, peerMarginMs, slowedWellUnderQ, TARGET_THROTTLED_SHARE } from '../../src/quota/pace-margin.js';
import { PaceMargins } from '../../src/quota/pace-margins.js';
import { QuotaKeeper } from '../../src/simulator/quota.js';
import { prng as seeded } from '../../src/seed/fake.js';

/**
 * The controller against the simulator's bucket: starts kept exactly 1/Q + margin apart, each
 * reaching the bucket up to `jitterMs` late. Returns the share of Q that went through, the share
 * of calls answered 429, and the margin at the end.
 */
function run(opts: { perSecond: number; burst?: number; jitterMs: number; calls: number; seed?: number; start?: number }) {
  const interval = 1_000 / opts.perSecond;
  const steps = marginSteps(interval);
  const bucket = new QuotaKeeper(
    { perSecond: opts.perSecond, perDay: 1e9, burst: opts.burst ?? 1, jitterMs: opts.jitterMs },
    seeded(opts.seed ?? 1),
  );
  let t = 1_000_000;
  const t0 = t;
  let margin = opts.start ?? 0;
  let ok = 0;
  let throttled = 0;
  let run = 0;
  for (let i = 0; i < opts.calls; i++) {
    const verdict = bucket.take('JP', t);
    if (verdict.ok) ok++;
    else throttled++;
    run = verdict.ok ? 0 : run + 1;
    margin = nextMargin(margin, !verdict.ok, steps, run);
    // A throttled call is tried again at the next start, which the margin now spaces.
    t += interval + margin;
  }
  return { pace: ok / (((t - t0) / 1_000) * opts.perSecond), throttledShare: throttled / opts.calls, margin };
}

describe('the pace margin (a quantile tracker of the jitter)', () => {
  it('settles just outside 20 ms of jitter at Q = 1 with a one-call bucket: ≥ 0.97 of Q and ≤ 0.5 % of calls 429', () => {
    const r = run({ perSecond: 1, jitterMs: 20, calls: 20_000 });
    expect(r.pace).toBeGreaterThanOrEqual(0.97);
    expect(r.throttledShare).toBeLessThanOrEqual(0.005);
    expect(r.margin).toBeGreaterThan(10);
    expect(r.margin).toBeLessThan(25);
  });

  it('without the margin the same jitter costs a third of the calls', () => {
    const interval = 1_000;
    const bucket = new QuotaKeeper({ perSecond: 1, perDay: 1e9, burst: 1, jitterMs: 20 }, seeded(1));
    let throttled = 0;
    for (let i = 0; i < 10_000; i++) if (!bucket.take('JP', 1_000_000 + i * interval).ok) throttled++;
    expect(throttled / 10_000).toBeGreaterThan(0.3);
  });

  it('converges to the 429 share it targets whatever the jitter, and from a margin far too large', () => {
    for (const jitterMs of [5, 50]) {
      const r = run({ perSecond: 1, jitterMs, calls: 40_000, seed: jitterMs, start: 200 });
      expect(r.throttledShare).toBeLessThan(3 * TARGET_THROTTLED_SHARE);
      // Within one step of the jitter: the margin moves in steps of 1/50 of an interval.
      expect(r.margin).toBeLessThan(jitterMs + marginSteps(1_000).up);
      expect(r.pace).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('stays at no margin when the bucket holds more than the jitter can bunch (Q = 2, a two-call bucket)', () => {
    const r = run({ perSecond: 2, burst: 2, jitterMs: 20, calls: 10_000 });
    expect(r.throttledShare).toBe(0);
    expect(r.margin).toBe(0);
    expect(r.pace).toBeCloseTo(1, 3);
  });

  it('grows by a hundredth of an interval per lone 429, more in a run, shrinks by the target share of that per start, never past an interval', () => {
    const s = marginSteps(1_000);
    expect(s.up).toBe(10);
    expect(s.down / (s.up + s.down)).toBeCloseTo(TARGET_THROTTLED_SHARE, 9);
    expect(nextMargin(0, false, s)).toBe(0);
    expect(nextMargin(10, true, s)).toBeCloseTo(20, 9);
    expect(nextMargin(10, true, s, 3)).toBeCloseTo(40, 9);
    // Seven 429s in a row reach a quarter interval: a refusing upstream is told apart quickly.
    let r = 0;
    for (let n = 1; n <= 7; n++) r = nextMargin(r, true, s, n);
    expect(slowedWellUnderQ(r, 1_000, 7, 7_000)).toBe(true);
    let m = 0;
    for (let i = 0; i < 200; i++) m = nextMargin(m, true, s);
    expect(m).toBe(1_000);
  });

  it('calls a run of 429s well under Q when the margin is a quarter interval or the calls came a fifth under Q', () => {
    expect(slowedWellUnderQ(250, 1_000, 3, 1_000)).toBe(true);
    expect(slowedWellUnderQ(0, 1_000, 31, 30_000)).toBe(false);
    expect(slowedWellUnderQ(0, 1_000, 15, 30_000)).toBe(true);
  });
});

describe('peerMarginMs', () => {
  it("is the median of the other countries' learnt margins, those with none left out", () => {
    const learnt = new Map([
      ['JP', 0],
      ['US', 8],
      ['DE', 18],
      ['FR', 10],
    ]);
    expect(peerMarginMs(learnt, 'JP')).toBe(10);
    // A country's own margin is not its peers'.
    expect(peerMarginMs(learnt, 'FR')).toBe(13);
    expect(peerMarginMs(new Map([['JP', 12]]), 'JP')).toBe(0);
    expect(peerMarginMs(new Map([['US', 0]]), 'JP')).toBe(0);
  });
});

describe('the least margin a country is paced at', () => {
  const intervals: Record<string, number> = { JP: 1_000, US: 1_000, UK: 300_000, FR: 200, DE: 100 };
  const paces = (ownClocks: boolean) =>
    new PaceMargins({ redis: undefined as never, paceKey: (c) => c, intervalMs: (c) => intervals[c]!, now: () => '', ownClocks });

  it("is its peers' margin, never under a millisecond (0.1 % of a faster interval) where processes read their own clocks", () => {
    const p = paces(true);
    expect(p.peerMs('JP')).toBe(1);
    expect(p.peerMs('UK')).toBe(1);
    expect(p.peerMs('FR')).toBeCloseTo(0.2, 10);
    p.heard('US', 12, false);
    expect(p.peerMs('JP')).toBe(12);
    // A fast pace is not strict until the upstream asks for a margin.
    expect(p.peerMs('DE')).toBe(0);
  });

  it('is none under one injected clock, where there is no error between clocks', () => {
    expect(paces(false).peerMs('JP')).toBe(0);
  });
});
