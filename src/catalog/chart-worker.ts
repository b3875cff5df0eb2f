/**
 * The entry of a chart-rendering worker thread (src/catalog/chart-renderer.ts runs it through
 * piscina): one task is one chart, drawn here so that vega's layout and SVG writing never hold the
 * api's event loop.
 */
import { renderPriceChart, type PriceChartInput } from './price-chart.js';

export default function renderChart(input: PriceChartInput): Promise<string> {
  return renderPriceChart(input);
}
