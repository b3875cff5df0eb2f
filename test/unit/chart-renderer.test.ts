import { afterAll, describe, expect, it } from 'vitest';
import { ChartRenderer } from '../../src/catalog/chart-renderer.js';
import type { PriceChartInput } from '../../src/catalog/price-chart.js';
import { ServiceUnavailableError } from '../../src/core/errors.js';

const NOW = Date.UTC(2026, 10, 27);
const input = (width: number): PriceChartInput => ({
  points: [{ at: new Date(NOW - 3_600_000), price: 1_980, currency: 'JPY', availability: 'in_stock' }],
  from: new Date(NOW - 86_400_000),
  to: new Date(NOW),
  currency: 'JPY',
  locale: 'ja-JP',
  timeZone: 'Asia/Tokyo',
  width,
  height: 150,
  title: 'Mouse',
  subtitle: 'B0CHART001',
});

const opened: ChartRenderer[] = [];
const renderer = (...args: ConstructorParameters<typeof ChartRenderer>) => {
  const r = new ChartRenderer(...args);
  opened.push(r);
  return r;
};
afterAll(async () => {
  await Promise.all(opened.map((r) => r.close()));
});

describe('ChartRenderer', () => {
  it('draws in a worker thread, and refuses at once with 503 what finds the thread and the queue taken', async () => {
    const r = renderer({ renderThreads: 1, renderQueue: 1, renderWaitMs: 120_000 });
    const answers = await Promise.allSettled([300, 600, 900].map((w) => r.render(input(w))));
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((answers[0] as PromiseFulfilledResult<string>).value).toMatch(/^<svg [^>]*width="300"/);
    const refused = (answers[2] as PromiseRejectedResult).reason as ServiceUnavailableError;
    expect(refused).toBeInstanceOf(ServiceUnavailableError);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    expect(r.inFlight).toBe(0);
  });

  it('answers 503 for a chart that reached a thread after its wait, and after it is closed', async () => {
    const late = renderer({ renderThreads: 1, renderQueue: 4, renderWaitMs: 1 });
    await expect(late.render(input(300))).rejects.toBeInstanceOf(ServiceUnavailableError);
    const closed = renderer({ renderThreads: 1, renderQueue: 4, renderWaitMs: 10_000 });
    await closed.close();
    await expect(closed.render(input(300))).rejects.toBeInstanceOf(ServiceUnavailableError);
  });
});
