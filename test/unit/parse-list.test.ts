import { describe, expect, it } from 'vitest';
import { classify, parseList, splitCsvLine, validEan13 } from '../../web/app/lib/parse-list.js';

// The account page's pasted-list parser (web/app/lib/parse-list.js), run in node: it has no DOM.

describe('classify', () => {
  it('tells ASINs, JAN/EAN codes and browse nodes apart by their shape', () => {
    expect(classify('b0d1234567')).toEqual({ type: 'asin', value: 'B0D1234567' });
    expect(classify(' 4901234567894 ')).toEqual({ type: 'ean', value: '4901234567894' });
    expect(classify('4 901234 567894')).toEqual({ type: 'ean', value: '4901234567894' });
    expect(classify('2277721051')).toEqual({ type: 'browse', value: '2277721051' });
    expect(classify('https://www.amazon.co.jp/dp/B0D1234567?th=1')).toEqual({ type: 'asin', value: 'B0D1234567' });
  });

  it('refuses what is none of them, and a JAN/EAN with a wrong check digit', () => {
    expect(classify('4901234567890')).toMatchObject({ error: expect.stringContaining('check digit') });
    expect(classify('B0D12345')).toMatchObject({ error: expect.stringContaining('not an ASIN, a JAN/EAN or a browse node') });
    expect(classify('')).toMatchObject({ error: 'empty' });
  });

  it("follows a column's type: a 10-digit ISBN-style ASIN in an asin column", () => {
    expect(classify('4088725093', 'asin')).toEqual({ type: 'asin', value: '4088725093' });
    expect(classify('B0D1234567', 'browse')).toMatchObject({ error: expect.stringContaining('browse node') });
    expect(classify('123', 'ean')).toMatchObject({ error: expect.stringContaining('13 digits') });
  });

  it('checks EAN-13 check digits', () => {
    expect(validEan13('4901234567894')).toBe(true);
    expect(validEan13('4006381333931')).toBe(true);
    expect(validEan13('4006381333932')).toBe(false);
  });
});

describe('parseList', () => {
  it('reads one identifier a line with the default priority (ASINs only), skipping blanks, comments and repeats', () => {
    const { entries, errors, duplicates } = parseList('B0D1234567\r\n\n# kettles\n4901234567894\n2277721051\nb0d1234567\n', 1);
    expect(entries).toEqual([
      { line: 1, type: 'asin', value: 'B0D1234567', priority: 1 },
      { line: 4, type: 'ean', value: '4901234567894', priority: null },
      { line: 5, type: 'browse', value: '2277721051', priority: null },
    ]);
    expect(errors).toEqual([]);
    expect(duplicates).toBe(1);
  });

  it('reads a CSV by its header, whatever the columns order, and ignores unknown columns', () => {
    const csv = ['\uFEFFTitle,ASIN,Priority', '"Kettle, 1.2 L",B0D1234567,high', 'Pot,B0D7654321,', 'Bad,B0D7654322,urgent'].join('\n');
    const { entries, errors } = parseList(csv);
    expect(entries).toEqual([
      { line: 2, type: 'asin', value: 'B0D1234567', priority: 1 },
      { line: 3, type: 'asin', value: 'B0D7654321', priority: 0 },
    ]);
    expect(errors).toEqual([{ line: 4, text: 'Bad,B0D7654322,urgent', message: 'priority urgent is not 0 or 1' }]);
  });

  it('takes each row from whichever identifier column it fills', () => {
    const { entries, errors } = parseList('asin;jan;node\nB0D1234567;;\n;4901234567894;\n;;2277721051\n;;\n');
    expect(entries.map((e) => [e.type, e.value])).toEqual([
      ['asin', 'B0D1234567'],
      ['ean', '4901234567894'],
      ['browse', '2277721051'],
    ]);
    expect(errors).toEqual([{ line: 5, text: ';;', message: 'no identifier in this row' }]);
  });

  it('names the line of each identifier it cannot read', () => {
    const { entries, errors } = parseList('B0D1234567\nnot a product\n4901234567890');
    expect(entries).toHaveLength(1);
    expect(errors.map((e) => e.line)).toEqual([2, 3]);
  });

  it('splits CSV fields with quotes doubled inside', () => {
    expect(splitCsvLine('"a ""b"", c",d,  e ')).toEqual(['a "b", c', 'd', 'e']);
  });
});
