/**
 * A product's price history as an SVG image, in the manner of Keepa's graph images: a step line of
 * the price, the periods it was out of stock shaded, its lowest and highest price marked. Drawn by
 * vega-lite and rendered by vega on the server (no browser, no canvas, no external references:
 * vega writes text escaped and names no fonts or images to fetch).
 *
 * Times are drawn on the wall clock of the configured zone: each instant becomes the zone's wall
 * time written as if it were UTC, and the chart's time scale is a UTC one, so ticks fall on the
 * zone's midnights and hours. Prices are formatted by Intl.NumberFormat in the marketplace's
 * language and the prices' currency, through an expression function vega calls for axis labels.
 */
import type * as Vega from 'vega';
import type * as VegaLite from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';
import type { Availability } from '../core/product.js';
import { wallClock } from '../core/dates.js';
import { thinLine, thinShades } from './chart-thinning.js';

export interface ChartPoint {
  readonly at: Date;
  /** Minor units (yen, cents); null when nothing was on offer. */
  readonly price: number | null;
  readonly currency: string | null;
  readonly availability: Availability;
}

export interface PriceChartInput {
  /**
   * Oldest first. The first may lie before `from`: the state the window begins in. Each point holds
   * until the next one, the last until `to`.
   */
  readonly points: readonly ChartPoint[];
  readonly from: Date;
  readonly to: Date;
  /** The marketplace's currency: the one prices are drawn in (points in another one are gaps). */
  readonly currency: string;
  /** BCP 47 language tag for numbers and dates (`ja-JP`). */
  readonly locale: string;
  readonly timeZone: string;
  readonly width: number;
  readonly height: number;
  readonly title: string;
  readonly subtitle: string;
}

// Vega calls these by name from label expressions; registered once per process. Their second
// argument is a format the server writes into the spec (never request input).
const PRICE_FN = 'shelfwatchPrice';
const TIME_FN = 'shelfwatchTime';
const formats = new Map<string, Intl.NumberFormat | Intl.DateTimeFormat>();

function priceFormat(currency: string, locale: string): Intl.NumberFormat {
  const key = `n|${currency}|${locale}`;
  let f = formats.get(key) as Intl.NumberFormat | undefined;
  if (!f) {
    f = new Intl.NumberFormat(locale, { style: 'currency', currency });
    formats.set(key, f);
  }
  return f;
}

type TickUnit = 'hour' | 'day' | 'month';

const TIME_OPTIONS: Record<TickUnit, Intl.DateTimeFormatOptions> = {
  hour: { month: 'numeric', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' },
  day: { month: 'short', day: 'numeric' },
  month: { year: 'numeric', month: 'short' },
};

function timeFormat(locale: string, unit: TickUnit): Intl.DateTimeFormat {
  const key = `t|${locale}|${unit}`;
  let f = formats.get(key) as Intl.DateTimeFormat | undefined;
  if (!f) {
    // The values are wall times written as UTC: formatted in UTC they read as the zone's.
    f = new Intl.DateTimeFormat(locale, { ...TIME_OPTIONS[unit], timeZone: 'UTC' });
    formats.set(key, f);
  }
  return f;
}

/**
 * vega and vega-lite, loaded on the first chart: they are large, and every process that builds the
 * app (workers, the CLI's commands) would otherwise pay for them at start-up without drawing one.
 * The label formatters are registered once, as they load.
 */
let renderer: Promise<{ vega: typeof Vega; vegaLite: typeof VegaLite }> | undefined;
function loadRenderer() {
  renderer ??= Promise.all([import('vega'), import('vega-lite')]).then(([vega, vegaLite]) => {
    vega.expressionFunction(PRICE_FN, (value: unknown, spec: unknown) => {
      const [currency, locale] = String(spec).split('|');
      return typeof value === 'number' ? priceFormat(currency!, locale!).format(value) : '';
    });
    vega.expressionFunction(TIME_FN, (value: unknown, spec: unknown) => {
      const [locale, unit] = String(spec).split('|');
      const ms = value instanceof Date ? value.getTime() : typeof value === 'number' ? value : NaN;
      return Number.isFinite(ms) ? timeFormat(locale!, unit as TickUnit).format(ms) : '';
    });
    return { vega, vegaLite };
  });
  return renderer;
}

/** Digits after the decimal point of a currency's minor unit (JPY 0, USD 2). */
export function minorDigits(currency: string): number {
  return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
}

/** A price in minor units, formatted for `locale` in `currency` (`￥1,980`, `$19.80`). */
export function formatPrice(minor: number, currency: string, locale: string): string {
  return priceFormat(currency, locale).format(minor / 10 ** minorDigits(currency));
}

/** The wall time of `timeZone` at `at`, written as if it were UTC (ms). */
function wallMs(at: number, timeZone: string): number {
  const w = wallClock(at, timeZone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second, at % 1_000);
}

interface Segment {
  readonly start: number;
  readonly end: number;
  /** Major units, in the chart's currency; null: no price (or another currency). */
  readonly price: number | null;
  readonly minor: number | null;
  readonly inStock: boolean;
}

/** What the chart draws, before it is drawn: exported for tests and for anyone who wants the numbers. */
export interface ChartData {
  readonly segments: readonly Segment[];
  /** One row per vertex of the step line; `run` separates the stretches with a price. */
  readonly line: readonly { x: number; y: number; run: number }[];
  /** Stretches out of stock or without a price. */
  readonly shades: readonly { x: number; x2: number }[];
  readonly low: { x: number; y: number; minor: number } | null;
  readonly high: { x: number; y: number; minor: number } | null;
}

export function chartData(input: Pick<PriceChartInput, 'points' | 'from' | 'to' | 'currency'>): ChartData {
  const from = input.from.getTime();
  const to = input.to.getTime();
  const scale = 10 ** minorDigits(input.currency);
  const segments: Segment[] = [];
  input.points.forEach((p, i) => {
    const start = Math.max(p.at.getTime(), from);
    const end = Math.min(input.points[i + 1]?.at.getTime() ?? to, to);
    if (end <= start) return;
    const minor = p.price !== null && p.currency === input.currency ? p.price : null;
    segments.push({
      start,
      end,
      price: minor === null ? null : minor / scale,
      minor,
      inStock: p.availability === 'in_stock' && p.price !== null,
    });
  });

  const line: { x: number; y: number; run: number }[] = [];
  const shades: { x: number; x2: number }[] = [];
  let run = 0;
  let prev: Segment | undefined;
  for (const s of segments) {
    if (s.price !== null) {
      if (prev?.price === null || prev === undefined) run++;
      else line.pop(); // the previous stretch's closing vertex: this one starts where it ends
      line.push({ x: s.start, y: s.price, run }, { x: s.end, y: s.price, run });
    }
    if (!s.inStock) {
      const last = shades.at(-1);
      if (last && last.x2 === s.start) last.x2 = s.end;
      else shades.push({ x: s.start, x2: s.end });
    }
    prev = s;
  }

  let low: ChartData['low'] = null;
  let high: ChartData['high'] = null;
  for (const s of segments) {
    if (s.price === null || s.minor === null) continue;
    if (!low || s.minor < low.minor) low = { x: s.start, y: s.price, minor: s.minor };
    if (!high || s.minor > high.minor) high = { x: s.start, y: s.price, minor: s.minor };
  }
  return { segments, line, shades, low, high };
}

/**
 * Ticks of the time axis: the finest interval that leaves room for each label. Intervals are named
 * as vega-time's table names them: its hourly interval is `hours`, not the `hour` vega's schema
 * documents, which it looks up as undefined, failing the axis's tick transform (and then the SVG
 * render on the axis's missing scenegraph: "reading 'marktype'").
 */
function timeTicks(spanMs: number, width: number): { interval: 'hours' | 'day' | 'week' | 'month'; step: number; unit: TickUnit } {
  const room = Math.max(2, Math.floor(width / 90));
  const H = 3_600_000;
  const D = 24 * H;
  const options = [
    { interval: 'hours', step: 1, ms: H, unit: 'hour' },
    { interval: 'hours', step: 3, ms: 3 * H, unit: 'hour' },
    { interval: 'hours', step: 6, ms: 6 * H, unit: 'hour' },
    { interval: 'hours', step: 12, ms: 12 * H, unit: 'hour' },
    { interval: 'day', step: 1, ms: D, unit: 'day' },
    { interval: 'day', step: 2, ms: 2 * D, unit: 'day' },
    { interval: 'week', step: 1, ms: 7 * D, unit: 'day' },
    { interval: 'week', step: 2, ms: 14 * D, unit: 'day' },
    { interval: 'month', step: 1, ms: 30 * D, unit: 'month' },
    { interval: 'month', step: 2, ms: 61 * D, unit: 'month' },
    { interval: 'month', step: 3, ms: 91 * D, unit: 'month' },
  ] as const;
  return options.find((o) => spanMs / o.ms <= room) ?? options.at(-1)!;
}

const LINE_COLOR = '#f28e2b';
const SHADE_COLOR = '#d9d9d9';

/** The vega-lite spec of the chart (data inline; nothing to load). */
export function chartSpec(input: PriceChartInput): TopLevelSpec {
  const data = chartData(input);
  const line = thinLine(data.line, input.from.getTime(), input.to.getTime(), input.width);
  const shades = thinShades(data.shades, input.from.getTime(), input.to.getTime(), input.width);
  const tz = input.timeZone;
  const wall = (ms: number) => wallMs(ms, tz);
  const x0 = wall(input.from.getTime());
  const x1 = wall(input.to.getTime());
  const ticks = timeTicks(x1 - x0, input.width);
  const money = `${input.currency}|${input.locale}`;

  const x = {
    field: 'x',
    type: 'temporal',
    title: null,
    scale: { type: 'utc', domain: [x0, x1], nice: false },
    axis: {
      tickCount: { interval: ticks.interval, step: ticks.step },
      format: `${input.locale}|${ticks.unit}`,
      formatType: TIME_FN,
      labelOverlap: true,
      description: `Time (${tz})`,
      grid: true,
      gridColor: '#eeeeee',
    },
  } as const;

  const prices = line.map((r) => r.y);
  const hasPrice = prices.length > 0;
  const lo = hasPrice ? Math.min(...prices) : 0;
  const hi = hasPrice ? Math.max(...prices) : 1;
  const pad = hi > lo ? (hi - lo) * 0.15 : Math.max(Math.abs(hi) * 0.1, 1);
  const y = {
    field: 'y',
    type: 'quantitative',
    title: null,
    scale: { domain: [Math.max(0, lo - pad), hi + pad], zero: false, nice: true },
    axis: hasPrice
      ? { format: money, formatType: PRICE_FN, tickCount: Math.max(3, Math.floor(input.height / 50)), gridColor: '#eeeeee' }
      : { labels: false, ticks: false, grid: false, domain: false },
  } as const;

  /** Rows with their times moved to the zone's wall clock. */
  const rows = (values: readonly object[], keys: readonly string[]) =>
    values.map((v) => {
      const out: Record<string, unknown> = { ...v };
      for (const k of keys) out[k] = wall(out[k] as number);
      return out;
    });

  const layers: Record<string, unknown>[] = [
    {
      name: 'stockout',
      data: { values: rows(shades, ['x', 'x2']) },
      mark: { type: 'rect', color: SHADE_COLOR, opacity: 0.6, aria: false },
      encoding: { x, x2: { field: 'x2' } },
    },
    {
      name: 'price',
      data: { values: rows(line, ['x']) },
      mark: { type: 'line', interpolate: 'step-after', color: LINE_COLOR, strokeWidth: 2, aria: false },
      encoding: { x, y, detail: { field: 'run', type: 'nominal' } },
    },
  ];
  const marked: { x: number; y: number; minor: number; kind: 'low' | 'high'; dy: number }[] = [];
  if (data.low) marked.push({ ...data.low, kind: 'low', dy: 14 });
  // A flat price is one mark.
  if (data.high && data.high.minor !== data.low?.minor) marked.push({ ...data.high, kind: 'high', dy: -10 });
  for (const m of marked) {
    const values = rows([{ x: m.x, y: m.y, label: formatPrice(m.minor, input.currency, input.locale) }], ['x']);
    const color = m.kind === 'low' ? '#2e7d32' : '#c62828';
    layers.push(
      { name: m.kind, data: { values }, mark: { type: 'point', filled: true, size: 50, color, aria: false }, encoding: { x, y } },
      {
        name: `${m.kind}_label`,
        data: { values },
        mark: { type: 'text', dy: m.dy, align: 'left', dx: 4, fontSize: 11, fontWeight: 'bold', color, aria: false },
        encoding: { x, y, text: { field: 'label' } },
      },
    );
  }
  if (!hasPrice) {
    const message = data.segments.length === 0 ? 'No price history yet' : 'No price in this period';
    layers.push({
      name: 'empty',
      data: { values: [{ x: (x0 + x1) / 2, y: 0.5, text: message }] },
      mark: { type: 'text', fontSize: 14, color: '#666666', aria: false },
      encoding: { x, y, text: { field: 'text' } },
    });
  }

  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: input.width,
    height: input.height,
    autosize: { type: 'fit', contains: 'padding' },
    background: '#ffffff',
    padding: 8,
    title: {
      text: input.title,
      subtitle: input.subtitle,
      anchor: 'start',
      fontSize: 13,
      subtitleFontSize: 10,
      limit: Math.max(100, input.width - 20),
      subtitleLimit: Math.max(100, input.width - 20),
    },
    config: { customFormatTypes: true, view: { stroke: '#cccccc' }, axis: { labelFontSize: 10 } },
    layer: layers,
    // The layers are built as plain objects above; vega-lite checks them as it compiles.
  } as unknown as TopLevelSpec;
}

/** The chart as an SVG document. */
export async function renderPriceChart(input: PriceChartInput): Promise<string> {
  // The layers share one time domain, which vega-lite reports as a conflict it resolves to the
  // same union: only errors are worth a log line.
  const { vega, vegaLite } = await loadRenderer();
  const quiet = vega.logger(vega.Error);
  const view = new vega.View(vega.parse(vegaLite.compile(chartSpec(input), { logger: quiet }).spec), {
    renderer: 'none',
    logLevel: vega.Error,
  });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
