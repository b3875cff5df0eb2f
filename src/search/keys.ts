import mongoose from 'mongoose';

/**
 * Keyword search on an indexed array of normalised keys ("search_keys", one multikey index).
 *
 * Why not `$text`: MongoDB's text index splits words on spaces and punctuation, so Japanese (no
 * spaces) would be one "word" per sentence, and the CI stand-in has no `$text` at all. Why not a
 * regex: an unanchored case-insensitive regex scans every document and must be escaped with care.
 * Keys work the same on both servers, with plain equality and range bounds on an index.
 *
 * The keys of a text, after NFKC (full-width Latin and half-width kana fold to one form) and
 * lower-casing:
 * - a run of Japanese/Chinese script (kanji, hiragana, katakana, ー, 々): every character bigram,
 *   plus the run's last character alone, as `j:<chars>`. A query of two or more characters needs
 *   all of its bigrams; a one-character query matches any key that starts with it.
 * - any other run of letters, digits and marks: the whole word, as `w:<word>`. A query word matches
 *   the words it is a prefix of ("develop" finds "developers"), through a range on the same index.
 * Everything else (spaces, punctuation, regex metacharacters) only separates terms, in the text and
 * in the query alike, so `node.js` finds "Node.js" and `.*` is no pattern at all.
 */

export const SEARCH_KEYS_FIELD = 'search_keys';

/** Longest `q` the API accepts; it bounds the number of conditions a query can carry. */
export const MAX_QUERY_LENGTH = 200;

/**
 * Most distinct words a `q` may have. Each word is a range of its own on the index that the server
 * walks and intersects, so 200 characters of one-letter words would be 100 broad scans for one request.
 */
export const MAX_QUERY_TERMS = 10;

// A document's key list is bounded so that a 100 kB message cannot make a multi-megabyte array and
// index entry; texts are keyed in the order given (name/title before message), so the short, most
// searched fields are always covered.
export const MAX_KEYS = 4096;
// Long "words" are URLs' paths, hashes and base64; their first characters are enough to find them.
const MAX_WORD = 48;

type Kind = 'cjk' | 'word' | 'sep';

// Script=Han covers 々; the prolonged sound mark ー (U+30FC) and 〆 (U+3006) are Common, so they are named.
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u30FC\u3006]/u;
const WORD = /[\p{L}\p{N}\p{M}]/u;

export function normalise(text: string): string {
  return text.normalize('NFKC').toLowerCase();
}

function kindOf(ch: string): Kind {
  if (CJK.test(ch)) return 'cjk';
  return WORD.test(ch) ? 'word' : 'sep';
}

export interface Run {
  readonly kind: 'cjk' | 'word';
  readonly chars: readonly string[];
}

/** Splits normalised text into runs of one script kind (code points, so no split surrogates). */
export function runs(text: string): Run[] {
  const out: Run[] = [];
  let kind: Kind = 'sep';
  let chars: string[] = [];
  const flush = (): void => {
    if (kind !== 'sep' && chars.length) out.push({ kind, chars });
    chars = [];
  };
  for (const ch of normalise(text)) {
    const k = kindOf(ch);
    if (k !== kind) {
      flush();
      kind = k;
    }
    if (k !== 'sep') chars.push(ch);
  }
  flush();
  return out;
}

export function wordKey(chars: readonly string[]): string {
  return `w:${chars.slice(0, MAX_WORD).join('')}`;
}

export function cjkBigrams(chars: readonly string[]): string[] {
  const keys: string[] = [];
  for (let i = 0; i + 1 < chars.length; i++) keys.push(`j:${chars[i]}${chars[i + 1]}`);
  return keys;
}

/** The keys to store for a document made of these texts (null/undefined ones are skipped). */
export function searchKeys(...texts: readonly (string | null | undefined)[]): string[] {
  const keys = new Set<string>();
  for (const text of texts) {
    if (!text) continue;
    for (const run of runs(text)) {
      const produced = run.kind === 'word' ? [wordKey(run.chars)] : [...cjkBigrams(run.chars), `j:${run.chars.at(-1)!}`];
      for (const key of produced) {
        if (keys.size >= MAX_KEYS) return [...keys];
        keys.add(key);
      }
    }
  }
  return [...keys];
}

/** The distinct terms of a query as `searchFilter` splits it: a word, or a run of Japanese/Chinese script. */
export function queryTermCount(q: string): number {
  return new Set(runs(q).map((run) => `${run.kind}:${run.chars.join('')}`)).size;
}

/**
 * Why a search text is refused, phrased as a predicate for a 422 on its field ("must not …"), or
 * undefined when it is fine. Length in characters as people count them (code points).
 */
export function searchTextIssue(q: string): string | undefined {
  if ([...q].length > MAX_QUERY_LENGTH) return `must not be greater than ${MAX_QUERY_LENGTH} characters.`;
  if (queryTermCount(q) > MAX_QUERY_TERMS) return `must not have more than ${MAX_QUERY_TERMS} words.`;
  return undefined;
}

/**
 * What a `q` asks for: `all` (no q, or only spaces: the unfiltered list), `none` (q has no letter,
 * digit or kana, such as `.*`: nothing can match, and answering everything would make it act like a
 * pattern), or a `filter` to AND into the list query.
 */
export type SearchQuery =
  { readonly kind: 'all' } | { readonly kind: 'none' } | { readonly kind: 'match'; readonly filter: Record<string, unknown> };

/** The smallest string greater than every string that starts with `prefix` (binary UTF-8 order). */
export function prefixEnd(prefix: string): string {
  const points = [...prefix];
  const last = points.pop()!.codePointAt(0)!;
  // Code point order is UTF-8 byte order (MongoDB's simple collation); skip the surrogate gap.
  const next = last === 0xd7ff ? 0xe000 : last + 1;
  return points.join('') + String.fromCodePoint(next);
}

/**
 * Turns a user's `q` into a filter on `field`: every term must match. The operator objects are
 * built here from our own keys, never from request structure, so they are marked trusted for
 * mongoose's sanitizeFilter; the request's text only ever appears as a string value inside them.
 */
export function searchFilter(q: string | undefined, field: string = SEARCH_KEYS_FIELD): SearchQuery {
  if (q === undefined || q.trim() === '') return { kind: 'all' };
  const exact = new Set<string>();
  const prefixes = new Set<string>();
  for (const run of runs(q)) {
    if (run.kind === 'word') prefixes.add(wordKey(run.chars));
    else if (run.chars.length === 1) prefixes.add(`j:${run.chars[0]!}`);
    else for (const key of cjkBigrams(run.chars)) exact.add(key);
  }
  if (exact.size === 0 && prefixes.size === 0) return { kind: 'none' };

  const conditions: Record<string, unknown>[] = [];
  // One $all: the server walks the index on one key and checks the others on those documents.
  if (exact.size) conditions.push({ [field]: mongoose.trusted({ $all: [...exact] }) });
  // $elemMatch keeps both bounds on the same array element (a bare {$gte,$lt} on an array may be
  // met by two different elements), and gives the index one tight range per term.
  for (const p of prefixes) conditions.push({ [field]: mongoose.trusted({ $elemMatch: { $gte: p, $lt: prefixEnd(p) } }) });
  return { kind: 'match', filter: conditions.length === 1 ? conditions[0]! : { $and: conditions } };
}
