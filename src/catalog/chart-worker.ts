/**
 * The entry of a chart-rendering worker thread (src/catalog/chart-renderer.ts runs it through
 * piscina): one task is one chart, drawn here so that vega's layout and SVG writing never hold the
 * api's event loop.
 */
import { renderPriceChart, type PriceChartInput } from './price-chart.js';

export interface RenderTask {
  readonly input: PriceChartInput;
  /** Epoch ms: a task that reaches a thread later is not drawn (its request is answered 503). */
  readonly startBy: number;
}

/** The SVG, or null for a task that waited past its `startBy`. */
export default async function renderChart(task: RenderTask): Promise<string | null> {
  if (Date.now() > task.startBy) return null;
  return renderPriceChart(task.input);
}
