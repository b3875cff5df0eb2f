/**
 * bench:adaptive's frontier as an SVG: freshness against changes seen (÷ fixed's) for fixed
 * intervals, each objective and `balanced` at a sweep of weights, with the bound's frontier (a
 * scheduler knowing the true rates, at the same weights) dashed beside it, drawn by vega-lite and
 * rendered by vega on the server (no browser, no canvas).
 */
import { parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

export interface FrontierPoint {
  readonly name: string;
  /** Freshness's weight (null: fixed). */
  readonly weight: number | null;
  /** Share of time current. */
  readonly freshness: number;
  /** Changes seen ÷ fixed's. */
  readonly changes: number;
  /** A point of the bound's frontier: a scheduler knowing the true rates, at this weight. */
  readonly bound?: boolean;
}

export async function frontierSvg(points: readonly FrontierPoint[], title: string): Promise<string> {
  const sweep = points.filter((p) => !p.bound && p.name.startsWith('w = '));
  const named = points.filter((p) => !p.bound && !p.name.startsWith('w = '));
  const bound = points.filter((p) => p.bound);
  const x = { field: 'changes', type: 'quantitative', title: 'changes seen ÷ fixed intervals', scale: { zero: false } } as const;
  const y = { field: 'freshness', type: 'quantitative', title: 'share of time current', scale: { zero: false } } as const;
  const spec: TopLevelSpec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Refresh policies at equal calls', subtitle: title },
    width: 520,
    height: 360,
    layer: [
      {
        data: { values: bound.map((p) => ({ ...p })) },
        mark: { type: 'line', point: true, color: '#9d9d9d', strokeDash: [4, 3] },
        encoding: { x, y, order: { field: 'weight', type: 'quantitative' } },
      },
      {
        data: { values: bound.filter((p) => p.weight === 0 || p.weight === 1).map((p) => ({ ...p })) },
        mark: { type: 'text', dx: 6, dy: 10, align: 'left', fontSize: 9, color: '#777777' },
        encoding: { x, y, text: { field: 'name' } },
      },
      {
        data: { values: sweep.map((p) => ({ ...p })) },
        mark: { type: 'line', point: true, color: '#4c78a8' },
        encoding: { x, y, order: { field: 'weight', type: 'quantitative' } },
      },
      {
        data: { values: sweep.map((p) => ({ ...p })) },
        mark: { type: 'text', dx: 6, dy: -6, align: 'left', fontSize: 9, color: '#4c78a8' },
        encoding: { x, y, text: { field: 'name' } },
      },
      {
        data: { values: named.map((p) => ({ ...p })) },
        mark: { type: 'point', filled: true, size: 90 },
        encoding: { x, y, shape: { field: 'name', type: 'nominal', title: null }, color: { field: 'name', type: 'nominal', title: null } },
      },
    ],
  };
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
