import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { searchFilter, searchKeys, type SearchQuery } from '../../src/search/keys.js';
import { PREFIX_MAX, orderedSearchFilter, orderedSearchKeys, orderedSearchTerms } from '../../src/search/ordered-keys.js';

/** Whether a document with these keys meets a filter made of our search conditions. */
function meets(keys: readonly string[], filter: Record<string, unknown>): boolean {
  const and = filter.$and as Record<string, unknown>[] | undefined;
  if (and) return and.every((f) => meets(keys, f));
  const cond = JSON.parse(JSON.stringify(filter.search_keys)) as unknown;
  if (typeof cond === 'string') return keys.includes(cond);
  const c = cond as { $all?: string[]; $elemMatch?: { $gte: string; $lt: string } };
  if (c.$all) return c.$all.every((k) => keys.includes(k));
  if (c.$elemMatch) {
    const { $gte, $lt } = c.$elemMatch;
    // Code point order, as MongoDB's simple collation compares UTF-8 bytes.
    const cmp = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
    return keys.some((k) => cmp(k, $gte) >= 0 && cmp(k, $lt) < 0);
  }
  throw new Error(`unexpected condition ${JSON.stringify(cond)}`);
}

function matchesBefore(text: string, q: string): boolean | null {
  const s: SearchQuery = searchFilter(q);
  return s.kind === 'match' ? meets(searchKeys(text), s.filter) : null;
}

function matchesOrdered(text: string, q: string): boolean | null {
  const t = orderedSearchTerms(q);
  return t.kind === 'match' ? meets(orderedSearchKeys(text), orderedSearchFilter(t.keys, t.ranges)) : null;
}

describe('orderedSearchKeys', () => {
  it('adds every word prefix up to PREFIX_MAX and every Japanese/Chinese character alone', () => {
    const keys = orderedSearchKeys('Acme 東京');
    expect(keys).toEqual(expect.arrayContaining(['w:acme', 'p:a', 'p:ac', 'p:acm', 'p:acme', 'j:東京', 'j:京', 'c:東', 'c:京']));
    const long = orderedSearchKeys('x'.repeat(30));
    expect(long.filter((k) => k.startsWith('p:')).map((k) => k.length - 2)).toEqual(Array.from({ length: PREFIX_MAX }, (_, i) => i + 1));
  });
});

describe('orderedSearchTerms', () => {
  it('turns every term into one key, and checks a word longer than PREFIX_MAX whole', () => {
    expect(orderedSearchTerms('Type 東京都 猫')).toEqual({ kind: 'match', keys: ['p:type', 'j:東京', 'j:京都', 'c:猫'], ranges: [] });
    const word = 'internationalisation';
    expect(orderedSearchTerms(word)).toEqual({ kind: 'match', keys: [`p:${word.slice(0, PREFIX_MAX)}`], ranges: [`w:${word}`] });
    expect(orderedSearchTerms('  ').kind).toBe('all');
    expect(orderedSearchTerms('.*[]').kind).toBe('none');
  });

  it('never puts a regex or request structure in the filter', () => {
    const t = orderedSearchTerms('a.*b (c|d) $where {"$gt": ""}');
    expect(t.kind).toBe('match');
    const text = JSON.stringify(t.kind === 'match' ? orderedSearchFilter(t.keys, t.ranges) : null);
    expect(text).not.toMatch(/\$regex|\$where|\$gt"|\.\*/);
  });

  it('matches exactly what the prefix ranges on searchKeys match', () => {
    const alphabet = fc.constantFrom(...'ab xyz東京都猫ーカタ.-'.split(''), 'internationalisation ', 'Ｆｕｌｌ');
    const text = fc.array(alphabet, { maxLength: 30 }).map((a) => a.join(''));
    fc.assert(
      fc.property(text, text, (doc, q) => {
        expect(matchesOrdered(doc, q)).toBe(matchesBefore(doc, q));
      }),
      { numRuns: 2_000 },
    );
    // Queries cut from the text itself, so that most of them match.
    fc.assert(
      fc.property(text, fc.nat(), fc.nat(), (doc, i, j) => {
        const q = doc.slice(Math.min(i, j) % (doc.length + 1), Math.max(i, j) % (doc.length + 1));
        expect(matchesOrdered(doc, q)).toBe(matchesBefore(doc, q));
      }),
      { numRuns: 2_000 },
    );
    expect(matchesOrdered('Internationalisation guide', 'internationalis')).toBe(true);
    expect(matchesOrdered('Internationalisation guide', 'internationalize')).toBe(false);
    expect(matchesOrdered('東京都の猫', '京都')).toBe(true);
    expect(matchesOrdered('東京都の猫', '都猫')).toBe(false);
  });
});
