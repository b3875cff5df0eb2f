import { describe, expect, it } from 'vitest';
import { normalise, searchFilter, searchKeys, type SearchQuery } from '../../src/search/keys.js';

/** The conditions of a match, without mongoose's trusted marker, for comparison. */
function conditions(s: SearchQuery): unknown[] {
  if (s.kind !== 'match') throw new Error(`expected a match, got ${s.kind}`);
  const f = s.filter as { $and?: unknown[] };
  return JSON.parse(JSON.stringify(f.$and ?? [f])) as unknown[];
}

describe('searchKeys', () => {
  it('folds width and case (NFKC + lower case)', () => {
    expect(normalise('ＴｙｐｅＳｃｒｉｐｔ ｶﾀｶﾅ')).toBe('typescript カタカナ');
    expect(searchKeys('Hello WORLD')).toEqual(['w:hello', 'w:world']);
  });

  it('keys Japanese runs as bigrams plus the last character, Latin runs as words', () => {
    expect(searchKeys('東京都でTypeScript')).toEqual(['j:東京', 'j:京都', 'j:都で', 'j:で', 'w:typescript']);
    expect(searchKeys('猫')).toEqual(['j:猫']);
    expect(searchKeys('スーパー')).toEqual(['j:スー', 'j:ーパ', 'j:パー', 'j:ー']);
  });

  it('treats punctuation and regex characters as separators, and dedupes', () => {
    expect(searchKeys('node.js, Node.JS! a+b (c)*')).toEqual(['w:node', 'w:js', 'w:a', 'w:b', 'w:c']);
    expect(searchKeys(null, undefined, '')).toEqual([]);
  });

  it('bounds word length and the number of keys', () => {
    expect(searchKeys('x'.repeat(100))).toEqual([`w:${'x'.repeat(48)}`]);
    const many = Array.from({ length: 6000 }, (_, i) => `w${i}`).join(' ');
    expect(searchKeys('first', many)).toHaveLength(4096);
    expect(searchKeys('first', many)[0]).toBe('w:first');
  });
});

describe('searchFilter', () => {
  it('is `all` without q or with only spaces, `none` with no searchable character', () => {
    expect(searchFilter(undefined).kind).toBe('all');
    expect(searchFilter('   ').kind).toBe('all');
    expect(searchFilter('.*[](){}+?^$|\\').kind).toBe('none');
  });

  it('turns words into prefix ranges on one element, CJK runs into $all of bigrams', () => {
    expect(conditions(searchFilter('Type 東京都 猫'))).toEqual([
      { search_keys: { $all: ['j:東京', 'j:京都'] } },
      { search_keys: { $elemMatch: { $gte: 'w:type', $lt: 'w:typf' } } },
      { search_keys: { $elemMatch: { $gte: 'j:猫', $lt: 'j:猬' } } },
    ]);
  });

  it('a single term is a single condition, on the field asked for', () => {
    const s = searchFilter('abc', 'title_keys');
    expect(s.kind === 'match' && Object.keys(s.filter)).toEqual(['title_keys']);
  });

  it('never puts a regex in the filter', () => {
    const text = JSON.stringify(conditions(searchFilter('a.*b (c|d) [x] ^$ \\')));
    expect(text).not.toContain('$regex');
    expect(text).not.toContain('.*');
  });
});
