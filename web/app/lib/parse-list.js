// A pasted list of products to watch: one identifier a line, or a CSV whose header names its
// columns (asin, ean or jan, node or browse, priority; others are ignored). Each identifier is
// classified by its shape, so a plain list may mix ASINs, JAN/EAN codes and browse nodes. Pure
// functions with no DOM, so test/unit/parse-list.test.ts runs them in node.

/** More lines than a person pastes; the API adds one watch a request. */
export const MAX_ENTRIES = 1000;

const ASIN_RE = /^[0-9A-Z]{10}$/;
const PRODUCT_URL_RE = /\/(?:dp|gp\/product|gp\/aw\/d)\/([0-9A-Z]{10})(?:[/?#]|$)/i;

/** Header names of each column, lower-cased, spaces and hyphens as `_`. */
const COLUMNS = {
  asin: 'asin',
  ean: 'ean',
  jan: 'ean',
  jan_ean: 'ean',
  ean13: 'ean',
  node: 'browse',
  browse: 'browse',
  browse_node: 'browse',
  browsenode: 'browse',
  identifier: 'any',
  id: 'any',
  code: 'any',
  priority: 'priority',
};

/** Whether 13 digits end with a valid EAN-13 (JAN) check digit. */
export function validEan13(code) {
  if (!/^\d{13}$/.test(code)) return false;
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(code[i]) * (i % 2 === 0 ? 1 : 3);
  return (10 - (sum % 10)) % 10 === Number(code[12]);
}

/**
 * What an identifier is: an ASIN (10 letters and digits with at least one letter, or a product
 * page's URL), a JAN/EAN (13 digits), or a browse node (any other run of up to 12 digits: a
 * 10-digit ISBN-style ASIN goes in an `asin` column). `as` forces a type (a CSV column's).
 * Answers `{ type, value }` or `{ error }`.
 */
export function classify(raw, as = 'any') {
  let text = String(raw ?? '').trim();
  if (!text) return { error: 'empty' };
  const url = PRODUCT_URL_RE.exec(text);
  if (url && (as === 'any' || as === 'asin')) return { type: 'asin', value: url[1].toUpperCase() };
  // JAN codes are often written in groups: 4 901234 567894.
  if (/^[\d\s-]+$/.test(text)) text = text.replace(/[\s-]/g, '');
  const upper = text.toUpperCase();
  if (as === 'asin')
    return ASIN_RE.test(upper) ? { type: 'asin', value: upper } : { error: `${text} is not an ASIN (10 letters and digits)` };
  if (as === 'ean') {
    if (!/^\d{13}$/.test(text)) return { error: `${text} is not a JAN/EAN (13 digits)` };
    return validEan13(text) ? { type: 'ean', value: text } : { error: `${text} has a wrong JAN/EAN check digit` };
  }
  if (as === 'browse')
    return /^\d{1,20}$/.test(text) ? { type: 'browse', value: text } : { error: `${text} is not a browse node (digits)` };
  if (/^\d{13}$/.test(text)) return validEan13(text) ? { type: 'ean', value: text } : { error: `${text} has a wrong JAN/EAN check digit` };
  if (/^\d{1,12}$/.test(text)) return { type: 'browse', value: text };
  if (ASIN_RE.test(upper) && /[A-Z]/.test(upper)) return { type: 'asin', value: upper };
  return { error: `${text} is not an ASIN, a JAN/EAN or a browse node` };
}

/** A priority cell: empty takes the default; 1/high or 0/normal/low. */
export function parsePriority(cell, fallback) {
  const text = String(cell ?? '')
    .trim()
    .toLowerCase();
  if (text === '') return fallback;
  if (text === '1' || text === 'high') return 1;
  if (text === '0' || text === 'normal' || text === 'low') return 0;
  return null;
}

/** One CSV record of a line (RFC 4180 quoting; a quoted field does not span lines here). */
export function splitCsvLine(line) {
  const cells = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"' && cell.trim() === '') {
      quoted = true;
      cell = '';
    } else if (c === ',' || c === '\t' || c === ';') {
      cells.push(cell.trim());
      cell = '';
    } else cell += c;
  }
  cells.push(cell.trim());
  return cells;
}

const columnOf = (name) =>
  COLUMNS[
    name
      .trim()
      .toLowerCase()
      .replace(/[\s-]+/g, '_')
  ];

/** The header's columns when the first line is one: every cell a name, at least one known. */
function headerOf(cells) {
  const kinds = cells.map(columnOf);
  if (!kinds.some((k) => k && k !== 'priority')) return null;
  if (cells.some((c) => c && !('error' in classify(c)))) return null;
  return kinds;
}

/**
 * The entries of a pasted text: `{ entries: [{ line, type, value, priority }], errors: [{ line,
 * text, message }], duplicates }`, lines numbered from 1. A product named twice is added once.
 */
export function parseList(text, defaultPriority = 0) {
  const lines = String(text ?? '')
    .replace(/^\uFEFF/, '')
    .split(/\r\n|\r|\n/);
  const entries = [];
  const errors = [];
  const seen = new Set();
  let duplicates = 0;
  let columns = null;
  let first = true;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line || line.startsWith('#')) continue;
    const number = i + 1;
    let found;
    let priority = defaultPriority;
    if (first) {
      first = false;
      columns = headerOf(splitCsvLine(line));
      if (columns) continue;
    }
    if (columns) {
      const cells = splitCsvLine(line);
      const at = columns.findIndex((k, j) => k && k !== 'priority' && cells[j]);
      if (at < 0) {
        errors.push({ line: number, text: line, message: 'no identifier in this row' });
        continue;
      }
      found = classify(cells[at], columns[at]);
      const p = columns.indexOf('priority');
      if (p >= 0) priority = parsePriority(cells[p], defaultPriority);
      if (priority === null) {
        errors.push({ line: number, text: line, message: `priority ${cells[p]} is not 0 or 1` });
        continue;
      }
    } else found = classify(line);
    if ('error' in found) {
      errors.push({ line: number, text: line, message: found.error });
      continue;
    }
    const key = `${found.type}:${found.value}`;
    if (seen.has(key)) {
      duplicates++;
      continue;
    }
    if (entries.length >= MAX_ENTRIES) {
      errors.push({ line: number, text: line, message: `more than ${MAX_ENTRIES} products: paste the rest next` });
      break;
    }
    seen.add(key);
    entries.push({ line: number, type: found.type, value: found.value, priority: found.type === 'asin' ? priority : null });
  }
  return { entries, errors, duplicates };
}
