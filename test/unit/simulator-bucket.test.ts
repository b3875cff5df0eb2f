import { describe, expect, it } from 'vitest';
import { QuotaKeeper } from '../../src/simulator/quota.js';
import { FaultInjector } from '../../src/simulator/faults.js';

describe("the simulator's bucket", () => {
  it('holds one call at Q = 1 by default: a call 1 s after the last goes, one 999 ms after is refused', () => {
    const q = new QuotaKeeper({ perSecond: 1, perDay: 100 });
    expect(q.take('JP', 0).ok).toBe(true);
    expect(q.take('JP', 1_000).ok).toBe(true);
    expect(q.take('JP', 1_999)).toMatchObject({ ok: false, limit: 'second' });
    // The refused call spent nothing: the next on the pace goes.
    expect(q.take('JP', 3_000).ok).toBe(true);
  });

  it('holds `burst` calls when told: two calls at once go at Q = 1 with a two-call bucket', () => {
    const q = new QuotaKeeper({ perSecond: 1, perDay: 100, burst: 2 });
    expect(q.take('JP', 0).ok).toBe(true);
    expect(q.take('JP', 0).ok).toBe(true);
    expect(q.take('JP', 0).ok).toBe(false);
  });

  it('sees each call up to jitterMs late: a late call then an early one, 1 s apart as sent, arrive too close', () => {
    const draws = [1, 0];
    const q = new QuotaKeeper({ perSecond: 1, perDay: 100, jitterMs: 20 }, () => draws.shift() ?? 0);
    expect(q.take('JP', 0).ok).toBe(true); // reaches the bucket at 20 ms
    expect(q.take('JP', 1_000)).toMatchObject({ ok: false, limit: 'second' }); // at 1000 ms: 980 ms later
    expect(q.take('JP', 1_020).ok).toBe(true);
  });

  it('an account refused everywhere or in one marketplace is refused before the quota, switchable at run time', () => {
    const f = new FaultInjector();
    expect(f.beforeQuota('JP')).toBeUndefined();
    f.update({ refused: ['JP'] });
    expect(f.beforeQuota('JP')).toBe('refused');
    expect(f.beforeQuota('US')).toBeUndefined();
    f.update({ refused: [], throttleAll: true });
    expect(f.beforeQuota('US')).toBe('refused');
    f.reset();
    expect(f.beforeQuota('US')).toBeUndefined();
  });
});
