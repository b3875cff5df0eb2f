/**
 * The sizes and windows a price chart is drawn at. A request may ask for any value in range; it is
 * drawn at the nearest preset (a tie goes to the larger), so every product has at most
 * DAYS × WIDTHS × HEIGHTS charts per last point: a cache holds what people ask for, and a client
 * cannot make a render per pixel of width.
 */

export const CHART_DAYS = [1, 7, 30, 90, 365] as const;
export const CHART_WIDTHS = [300, 600, 900, 1200] as const;
export const CHART_HEIGHTS = [150, 300, 450, 600] as const;

export interface ChartPreset {
  readonly days: number;
  readonly width: number;
  readonly height: number;
}

/** The preset nearest `value`; of two as near, the larger. */
export function snapTo(value: number, presets: readonly number[]): number {
  let best = presets[0]!;
  for (const p of presets) if (Math.abs(p - value) <= Math.abs(best - value)) best = p;
  return best;
}

export function snapPreset(asked: ChartPreset): ChartPreset {
  return {
    days: snapTo(asked.days, CHART_DAYS),
    width: snapTo(asked.width, CHART_WIDTHS),
    height: snapTo(asked.height, CHART_HEIGHTS),
  };
}

/** The preset as a query (`days=30&width=600&height=300`): what the answer says it drew. */
export function presetQuery(p: ChartPreset): string {
  return `days=${p.days}&width=${p.width}&height=${p.height}`;
}
