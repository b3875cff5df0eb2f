import { describe, expect, it } from 'vitest';
import { CHART_DAYS, CHART_HEIGHTS, CHART_WIDTHS, presetQuery, snapPreset, snapTo } from '../../src/catalog/chart-presets.js';

describe('chart presets', () => {
  it.each([
    [1, CHART_DAYS, 1],
    [3, CHART_DAYS, 1],
    [4, CHART_DAYS, 7],
    [14, CHART_DAYS, 7],
    [60, CHART_DAYS, 90],
    [365, CHART_DAYS, 365],
    [300, CHART_WIDTHS, 300],
    [449, CHART_WIDTHS, 300],
    [450, CHART_WIDTHS, 600],
    [1169, CHART_WIDTHS, 1200],
    [1600, CHART_WIDTHS, 1200],
    [150, CHART_HEIGHTS, 150],
    [400, CHART_HEIGHTS, 450],
    [703, CHART_HEIGHTS, 600],
  ])('snaps %i to %j’s nearest: %i (a tie to the larger)', (value, presets, expected) => {
    expect(snapTo(value, presets)).toBe(expected);
  });

  it('snaps a request to one preset and names it as a query', () => {
    const p = snapPreset({ days: 4, width: 1169, height: 703 });
    expect(p).toEqual({ days: 7, width: 1200, height: 600 });
    expect(presetQuery(p)).toBe('days=7&width=1200&height=600');
  });
});
