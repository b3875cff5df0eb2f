import { describe, expect, it } from 'vitest';
import { columnsFor, thinLine, thinShades, type LineRow } from '../../src/catalog/chart-thinning.js';

const FROM = 1_700_000_000_000;
const TO = FROM + 30 * 86_400_000;

/** A step line of `n` prices spread over the window (a random walk, seeded), with its closing vertex. */
function walk(n: number, run = 1, from = FROM, to = TO): LineRow[] {
  let seed = 7;
  const rand = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
  const rows: LineRow[] = [];
  let y = 1000;
  for (let i = 0; i < n; i++) {
    y = Math.max(1, y + Math.round((rand() - 0.5) * 100));
    rows.push({ x: from + Math.floor(((to - from) * i) / n), y, run });
  }
  rows.push({ x: to, y, run });
  return rows;
}

function byColumn(rows: readonly LineRow[], width: number): Map<number, LineRow[]> {
  const span = (TO - FROM) / columnsFor(width);
  const out = new Map<number, LineRow[]>();
  for (const r of rows) {
    const c = Math.min(columnsFor(width) - 1, Math.floor((r.x - FROM) / span));
    let list = out.get(c);
    if (!list) out.set(c, (list = []));
    list.push(r);
  }
  return out;
}

describe('thinLine', () => {
  it.each([300, 600, 1200])('keeps at most two vertices a pixel at width %i, and every column’s extremes and last price', (width) => {
    const line = walk(20_000);
    const thin = thinLine(line, FROM, TO, width);
    expect(thin.length).toBeLessThanOrEqual(2 * width);
    expect(thin.length).toBeGreaterThan(width);
    const before = byColumn(line, width);
    const after = byColumn(thin, width);
    expect([...after.keys()]).toEqual([...before.keys()]);
    for (const [c, rows] of before) {
      const ys = rows.map((r) => r.y);
      const kept = after.get(c)!.map((r) => r.y);
      expect(Math.min(...kept)).toBe(Math.min(...ys));
      expect(Math.max(...kept)).toBe(Math.max(...ys));
      // The level the line leaves the column at.
      expect(kept.at(-1)).toBe(ys.at(-1));
    }
    // It starts and ends where the line did, in time order.
    expect(thin[0]!.x).toBe(line[0]!.x);
    expect(thin.at(-1)).toEqual({ ...line.at(-1)!, run: 1 });
    for (let i = 1; i < thin.length; i++) expect(thin[i]!.x).toBeGreaterThan(thin[i - 1]!.x);
  });

  it('leaves a line with fewer vertices than columns as it was', () => {
    const line = walk(50);
    expect(thinLine(line, FROM, TO, 600)).toEqual(line);
  });

  it('keeps stretches apart across a gap wider than a column, and joins them across a narrower one', () => {
    const mid = FROM + (TO - FROM) / 2;
    const column = (TO - FROM) / columnsFor(600);
    const apart = [...walk(100, 1, FROM, mid), ...walk(100, 2, mid + 10 * column, TO)];
    expect(new Set(thinLine(apart, FROM, TO, 600).map((r) => r.run))).toEqual(new Set([1, 2]));
    const start = Math.ceil((mid - FROM) / column) * column + FROM;
    const joined = [...walk(10, 1, FROM, start + column / 4), ...walk(10, 2, start + column / 2, TO)];
    expect(new Set(thinLine(joined, FROM, TO, 600).map((r) => r.run))).toEqual(new Set([1]));
  });
});

describe('thinShades', () => {
  it('joins shades closer than a column and keeps the others apart', () => {
    const column = (TO - FROM) / columnsFor(300);
    const shades = [
      { x: FROM, x2: FROM + 3 * column },
      { x: FROM + 3.5 * column, x2: FROM + 4 * column },
      { x: FROM + 10 * column, x2: FROM + 12 * column },
    ];
    expect(thinShades(shades, FROM, TO, 300)).toEqual([
      { x: FROM, x2: FROM + 4 * column },
      { x: FROM + 10 * column, x2: FROM + 12 * column },
    ]);
  });
});
