import { describe, expect, it } from 'vitest';
import { renderPriceChart, type ChartPoint } from '../../src/catalog/price-chart.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 27, 5, 30);
const points: ChartPoint[] = Array.from({ length: 40 }, (_, i) => ({
  at: new Date(NOW - (40 - i) * (DAY / 8)),
  price: 1_000 + ((i * 37) % 500),
  currency: 'JPY',
  availability: i % 9 === 4 ? 'out_of_stock' : 'in_stock',
}));

const render = (days: number, width: number, height: number) =>
  renderPriceChart({
    points,
    from: new Date(NOW - days * DAY),
    to: new Date(NOW),
    currency: 'JPY',
    locale: 'ja-JP',
    timeZone: 'Asia/Tokyo',
    width,
    height,
    title: 'Mouse',
    subtitle: 'B0CHART001 · JP',
  });

const xLabels = (svg: string) =>
  [...svg.matchAll(/<text [^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!).filter((t) => /^\d{1,2}\/\d{1,2} \d\d:\d\d$/.test(t));

describe('renderPriceChart', () => {
  // Short windows get hourly ticks: the interval vega looks up must be one it has.
  it.each([
    [1, 300, 150],
    [4, 1169, 703],
    [2, 1600, 800],
  ])('draws %i days at %ix%i with hourly time labels', async (days, width, height) => {
    const svg = await render(days, width, height);
    expect(svg).toMatch(new RegExp(`^<svg [^>]*width="${width}" height="${height}"`));
    expect(xLabels(svg).length).toBeGreaterThanOrEqual(2);
  });
});
