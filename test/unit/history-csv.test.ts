import { describe, expect, it } from 'vitest';
import { csvField, csvRecord, HISTORY_CSV_COLUMNS, historyCsvChunks } from '../../src/catalog/history-csv.js';
import type { Point } from '../../src/catalog/history.js';

describe('csvField', () => {
  it.each([
    ['plain', 'plain'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['cr\rhere', '"cr\rhere"'],
    ['=1+1', "'=1+1"],
    ['+1', "'+1"],
    ['-1', "'-1"],
    ['@A1', "'@A1"],
    ['\tx', "'\tx"],
    ['\rx', `"'\rx"`],
    ['=A1,"B"', `"'=A1,""B"""`],
    ['a=b', 'a=b'],
    ['', ''],
  ])('writes the text %j as %j', (value, field) => {
    expect(csvField(value)).toBe(field);
  });

  it('writes numbers and booleans as they are, and null as an empty field', () => {
    expect(csvRecord([-5, 1.5, true, false, null, 'x'])).toBe('-5,1.5,true,false,,x\r\n');
  });
});

const point = (i: number): Point => ({
  at: new Date(Date.UTC(2026, 0, 1) + i * 60_000),
  price: i,
  currency: 'JPY',
  availability: 'in_stock',
  buybox: true,
  rank: null,
});

async function* pointsOf(n: number, pulled: { n: number }) {
  for (let i = 0; i < n; i++) {
    pulled.n++;
    yield point(i);
  }
}

describe('historyCsvChunks', () => {
  it('names the JSON fields, and reads the points a chunk at a time', async () => {
    expect(HISTORY_CSV_COLUMNS).toEqual(['at', 'price', 'currency', 'availability', 'buybox', 'rank']);
    const pulled = { n: 0 };
    const chunks = historyCsvChunks(pointsOf(2_000, pulled), 'UTC');
    const first = await chunks.next();
    // A chunk of about 16 KiB: a few hundred points read, not all of them.
    expect(pulled.n).toBeGreaterThan(100);
    expect(pulled.n).toBeLessThan(1_000);
    const rest: string[] = [];
    for await (const chunk of chunks) rest.push(chunk);
    const file = [first.value as string, ...rest].join('');
    const lines = file.split('\r\n');
    expect(lines[0]).toBe('at,price,currency,availability,buybox,rank');
    expect(lines[1]).toBe('2026-01-01 00:00:00,0,JPY,in_stock,true,');
    expect(lines).toHaveLength(2_002);
    expect(lines.at(-1)).toBe('');
  });
});
