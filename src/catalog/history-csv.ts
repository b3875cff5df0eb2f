/**
 * A product's history as a CSV file: the JSON history route's points (presentPoint), one record
 * each in the order they come, under a header naming the JSON fields.
 *
 * CSV as RFC 4180 writes it: records end in CRLF, a field is quoted when it holds a comma, a quote,
 * CR or LF, and a quote inside is doubled. The files are opened in spreadsheets, which run a cell
 * that starts like a formula: a text field starting with `=`, `+`, `-`, `@`, tab or CR gets a
 * leading single quote, as OWASP advises against CSV injection. Numbers and booleans are written
 * as they are (a negative price is a number, not a formula).
 */
import { historyPointRecordSchema, presentPoint, type HistoryPointRecord, type Point } from './history.js';

export type CsvValue = string | number | boolean | null;

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One field; null is the empty field. */
export function csvField(value: CsvValue): string {
  if (value === null) return '';
  if (typeof value !== 'string') return String(value);
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One record, its CRLF included. */
export function csvRecord(values: readonly CsvValue[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/** The JSON point's fields, in the order its schema declares them. */
export const HISTORY_CSV_COLUMNS = Object.keys(historyPointRecordSchema.shape) as (keyof HistoryPointRecord)[];

/**
 * Records are gathered into chunks of about this many characters: one write per point would cost a
 * syscall and a chunk header per 40 bytes.
 */
const CHUNK_CHARS = 16 * 1024;

function historyCsvRecord(p: HistoryPointRecord): string {
  return csvRecord(HISTORY_CSV_COLUMNS.map((column) => p[column]));
}

/** The file in chunks, read from `points` as the chunks are taken, so it is never whole in memory. */
export async function* historyCsvChunks(points: AsyncIterable<Point>, timeZone: string): AsyncGenerator<string, void, undefined> {
  let chunk = csvRecord(HISTORY_CSV_COLUMNS);
  for await (const point of points) {
    chunk += historyCsvRecord(presentPoint(point, timeZone));
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}
