import { describe, expect, it } from 'vitest';
import { ServerClock } from '../../src/quota/server-clock.js';

describe('ServerClock', () => {
  it('knows nothing before a sample', () => {
    expect(new ServerClock().at(1_000)).toBeUndefined();
  });

  it('reads the server as the least it can be by the answer that waited least', () => {
    const clock = new ServerClock();
    // The server is 250 ms ahead; answers that waited (a busy loop) say less, never more.
    clock.sample(10_250, 10_040);
    clock.sample(11_250, 11_000.5);
    clock.sample(12_250, 12_030);
    expect(clock.at(13_000)).toBeCloseTo(13_249.5, 6);
  });

  it('forgets samples older than two minutes', () => {
    const clock = new ServerClock();
    clock.sample(1_100, 1_000);
    expect(clock.at(2_000)).toBe(2_100);
    expect(clock.at(1_000 + 120_001)).toBeUndefined();
  });

  it('ignores a sample whose times are not numbers', () => {
    const clock = new ServerClock();
    clock.sample(Number.NaN, 10);
    clock.sample(10, Number.POSITIVE_INFINITY);
    expect(clock.at(100)).toBeUndefined();
  });
});
