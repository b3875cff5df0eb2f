import { describe, expect, it } from 'vitest';
import { atMostEvery } from '../../src/metrics/at-most-every.js';

describe('atMostEvery', () => {
  it('runs once for concurrent and back-to-back calls, again once the interval has passed', async () => {
    let clock = 0;
    let runs = 0;
    const refresh = atMostEvery(
      5_000,
      async () => {
        runs++;
        await new Promise((r) => setTimeout(r, 5));
      },
      () => clock,
    );
    await Promise.all([refresh(), refresh(), refresh()]);
    expect(runs).toBe(1);
    clock = 4_999;
    await refresh();
    expect(runs).toBe(1);
    clock = 5_000;
    await Promise.all([refresh(), refresh()]);
    expect(runs).toBe(2);
  });

  it('never starts a second run while one is still going, however long it takes', async () => {
    let clock = 0;
    let runs = 0;
    let finish: () => void = () => undefined;
    const refresh = atMostEvery(
      1_000,
      () => {
        runs++;
        return new Promise<void>((r) => (finish = r));
      },
      () => clock,
    );
    const first = refresh();
    clock = 10_000;
    const second = refresh();
    expect(second).toBe(first);
    expect(runs).toBe(1);
    finish();
    await first;
    const third = refresh();
    expect(runs).toBe(2);
    finish();
    await third;
  });
});
