import { describe, expect, it } from 'vitest';
import { waterFill } from '../../src/scheduling/due.js';

describe('waterFill: max-min fair shares of a pass', () => {
  it('gives an account asking less than its share all it asks, and its rest to the others', () => {
    // Shares of 70 by weight: 10 for each light account and 20 for the heavy one.
    expect(waterFill([6, 6, 6, 6, 6, 500], [1, 1, 1, 1, 1, 2], 70)).toEqual([6, 6, 6, 6, 6, 40]);
    expect(waterFill([12, 12, 12, 12, 12, 500], [1, 1, 1, 1, 1, 2], 70)).toEqual([10, 10, 10, 10, 10, 20]);
  });

  it('holds everyone backlogged to their weights', () => {
    expect(waterFill([500, 500, 500], [1, 1, 2], 40)).toEqual([10, 10, 20]);
  });

  it('never gives more than the slots or than asked', () => {
    const given = waterFill([3, 0, 50, 7], [1, 1, 1, 1], 20);
    expect(given.reduce((a, b) => a + b, 0)).toBe(20);
    expect(given).toEqual([3, 0, 10, 7]);
    expect(waterFill([1, 1], [1, 1], 5)).toEqual([1, 1]);
  });
});
