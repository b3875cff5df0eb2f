/**
 * A chart's step line and stock-out shading cut down to what its width can show, before vega draws
 * them: a render's cost grows with the vertices it lays out, and a window of thousands of changes
 * is a few hundred pixels wide.
 *
 * The window is cut into columns of 1.5 pixels of the image's width. Within one column a step line
 * shows a vertical stroke from the column's lowest to its highest price and leaves at its last
 * price, so each column keeps at most three vertices: its extremes and its last price, in that
 * order (two when the last price is an extreme). That is at most two vertices per pixel, and the
 * line looks as it did: every column's extremes and the level between columns are kept. A stretch
 * without a price (and a stretch out of stock) narrower than a column is not drawn apart: the line
 * runs on across it, and neighbouring shades join.
 */

export interface LineRow {
  readonly x: number;
  readonly y: number;
  /** Stretches of the line that are drawn apart (a gap without a price between them). */
  readonly run: number;
}

export interface Shade {
  readonly x: number;
  readonly x2: number;
}

/** Pixels of the image's width per column. */
export const COLUMN_PX = 1.5;

export function columnsFor(width: number): number {
  return Math.max(1, Math.ceil(width / COLUMN_PX));
}

/** The line's vertices, at most three per column, oldest first. */
export function thinLine(line: readonly LineRow[], fromMs: number, toMs: number, width: number): LineRow[] {
  const columns = columnsFor(width);
  const span = Math.max(1, toMs - fromMs) / columns;
  const columnOf = (x: number) => Math.min(columns - 1, Math.max(0, Math.floor((x - fromMs) / span)));
  const out: LineRow[] = [];
  let run = 0;
  let before: LineRow | undefined;
  for (let i = 0; i < line.length;) {
    const first = line[i]!;
    const column = columnOf(first.x);
    let low = first;
    let high = first;
    let last = first;
    let j = i + 1;
    for (; j < line.length && columnOf(line[j]!.x) === column; j++) {
      const r = line[j]!;
      if (r.y < low.y) low = r;
      if (r.y > high.y) high = r;
      last = r;
    }
    // A stretch that begins in the column the one before it ended in runs on from it.
    if (first.run !== before?.run) run++;
    const [a, b] = low.x <= high.x ? [low, high] : [high, low];
    let keep: { x: number; y: number }[];
    if (first === last) keep = [first];
    else if (last.y === b.y) keep = [{ x: first.x, y: a.y }, last];
    else if (last.y === a.y) keep = [{ x: first.x, y: b.y }, last];
    else keep = [{ x: first.x, y: a.y }, b, last];
    for (const k of keep) out.push({ x: k.x, y: k.y, run });
    before = last;
    i = j;
  }
  return out;
}

/** Shades with the gaps between them narrower than a column closed. */
export function thinShades(shades: readonly Shade[], fromMs: number, toMs: number, width: number): Shade[] {
  const span = Math.max(1, toMs - fromMs) / columnsFor(width);
  const out: Shade[] = [];
  for (const s of shades) {
    const prev = out.at(-1);
    if (prev && s.x - prev.x2 < span) out[out.length - 1] = { x: prev.x, x2: Math.max(prev.x2, s.x2) };
    else out.push({ x: s.x, x2: s.x2 });
  }
  return out;
}
