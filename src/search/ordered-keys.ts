import mongoose from 'mongoose';
import { MAX_KEYS, SEARCH_KEYS_FIELD, cjkBigrams, prefixEnd, runs, searchKeys, wordKey } from './keys.js';

/**
 * Keys and filters for a search whose matches are listed newest first from an index, for a
 * collection too large to read every match of a common word (the world catalogue, 10^6 products).
 *
 * `searchFilter` matches a word prefix ("develop" finds "developers") with a range of keys, and a
 * range on a multikey index cannot yield its documents in another field's order: every match is
 * read and sorted before the first page comes out. Here each word also stores its prefixes as keys
 * of their own (`p:d`, `p:de`, … up to PREFIX_MAX characters), and each Japanese/Chinese character
 * alone (`c:猫`), so every query term is one equality. On an index `{search_keys: 1, updated_at: -1,
 * _id: -1}` the server then walks one term's entries from the newest and stops at the page's end;
 * the other terms are checked on the documents it meets. The matches are the same as
 * `searchFilter`'s on `searchKeys`, whose keys these include.
 */

/**
 * Longest word prefix kept as a key. A longer query word is found through its first PREFIX_MAX
 * characters and checked whole on the documents met; few words share that many characters.
 */
export const PREFIX_MAX = 12;

/** `searchKeys` plus every word's prefixes and every Japanese/Chinese character alone. */
export function orderedSearchKeys(...texts: readonly (string | null | undefined)[]): string[] {
  const keys = new Set(searchKeys(...texts));
  for (const text of texts) {
    if (!text) continue;
    for (const run of runs(text)) {
      if (run.kind === 'word') {
        const word = wordKey(run.chars).slice(2);
        const points = [...word];
        for (let n = 1; n <= Math.min(points.length, PREFIX_MAX); n++) keys.add(`p:${points.slice(0, n).join('')}`);
      } else {
        for (const ch of run.chars) keys.add(`c:${ch}`);
      }
      if (keys.size >= MAX_KEYS) return [...keys].slice(0, MAX_KEYS);
    }
  }
  return [...keys];
}

/** A user's `q` as keys that must all be present, and words longer than PREFIX_MAX to check whole. */
export type OrderedSearch =
  | { readonly kind: 'all' }
  | { readonly kind: 'none' }
  | { readonly kind: 'match'; readonly keys: readonly string[]; readonly ranges: readonly string[] };

/** The terms of a `q`: equalities on `orderedSearchKeys`' keys, and a range check per long word. */
export function orderedSearchTerms(q: string | undefined): OrderedSearch {
  if (q === undefined || q.trim() === '') return { kind: 'all' };
  const keys = new Set<string>();
  const ranges = new Set<string>();
  for (const run of runs(q)) {
    if (run.kind === 'cjk') {
      if (run.chars.length === 1) keys.add(`c:${run.chars[0]!}`);
      else for (const key of cjkBigrams(run.chars)) keys.add(key);
      continue;
    }
    const whole = wordKey(run.chars);
    const points = [...whole.slice(2)];
    keys.add(`p:${points.slice(0, PREFIX_MAX).join('')}`);
    if (points.length > PREFIX_MAX) ranges.add(whole);
  }
  return keys.size === 0 ? { kind: 'none' } : { kind: 'match', keys: [...keys], ranges: [...ranges] };
}

/**
 * The filter of a match, its keys in the order given: the server bounds its walk by one equality
 * on a multikey index (the stand-in by the first), so the caller puts the rarest first. Built from
 * our own keys, never from request structure: marked trusted for sanitizeFilter, the request's text
 * only ever a string value inside.
 */
export function orderedSearchFilter(
  keys: readonly string[],
  ranges: readonly string[],
  field: string = SEARCH_KEYS_FIELD,
): Record<string, unknown> {
  const conditions: Record<string, unknown>[] = keys.map((key) => ({ [field]: key }));
  for (const p of ranges) conditions.push({ [field]: mongoose.trusted({ $elemMatch: { $gte: p, $lt: prefixEnd(p) } }) });
  return conditions.length === 1 ? conditions[0]! : { $and: conditions };
}
