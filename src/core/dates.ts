import { z } from 'zod';

/**
 * Dates in answers: `YYYY-MM-DD HH:MM:SS` in the configured time zone, as Laravel serialises them
 * with a `Y-m-d H:i:s` cast. Intl formatters are costly to build and a page formats dozens of
 * dates, so there is one per time zone for the life of the process.
 */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      // h23, not hour12:false: some engines render midnight as "24" with the latter.
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * A zone's offset is the same for nearly every quarter hour: clocks move a few times a year, and
 * mostly on a quarter hour of UTC. So a quarter's offset is asked of Intl once (at its first and
 * last second), and each date in it is plain arithmetic: formatToParts costs about 10 µs a date,
 * which a page of products pays several times over. A quarter whose two ends differ holds a
 * change: its dates go through Intl whole.
 */
const QUARTER_MS = 900_000;
const OFFSETS_KEPT = 20_000;
const offsets = new Map<string, number | null>();

function zoneOffset(at: number, timeZone: string): number {
  const w = wallClock(at, timeZone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - at;
}

function quarterOffset(at: number, timeZone: string): number | null {
  const quarter = Math.floor(at / QUARTER_MS) * QUARTER_MS;
  const key = `${timeZone}|${quarter}`;
  let offset = offsets.get(key);
  if (offset === undefined) {
    const first = zoneOffset(quarter, timeZone);
    offset = first === zoneOffset(quarter + QUARTER_MS - 1_000, timeZone) ? first : null;
    if (offsets.size >= OFFSETS_KEPT) offsets.clear();
    offsets.set(key, offset);
  }
  return offset;
}

const two = (n: number): string => (n < 10 ? `0${n}` : String(n));

export function formatDateTime(date: Date, timeZone: string): string {
  const at = date.getTime();
  // Before 1970 (and for an invalid date) Intl answers whole.
  const offset = at >= 0 ? quarterOffset(at, timeZone) : null;
  if (offset === null) return formatWithIntl(date, timeZone);
  const w = new Date(at - (at % 1_000) + offset);
  // Years before 1000 or after 9999 never occur in our data; padStart keeps the width honest anyway.
  return `${String(w.getUTCFullYear()).padStart(4, '0')}-${two(w.getUTCMonth() + 1)}-${two(w.getUTCDate())} ${two(w.getUTCHours())}:${two(w.getUTCMinutes())}:${two(w.getUTCSeconds())}`;
}

/** The same text, every part from Intl. */
export function formatWithIntl(date: Date, timeZone: string): string {
  const parts: Record<string, string> = {};
  for (const p of formatterFor(timeZone).formatToParts(date)) parts[p.type] = p.value;
  return `${parts.year!.padStart(4, '0')}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
}

export interface WallClock {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

/** What the wall clock of `timeZone` shows at `at` (epoch ms). */
export function wallClock(at: number, timeZone: string): WallClock {
  const parts: Record<string, string> = {};
  for (const p of formatterFor(timeZone).formatToParts(new Date(at))) parts[p.type] = p.value;
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
  };
}

/** The zone's offset from UTC at `at`, in ms (Tokyo: +9 h). */
function offsetAt(at: number, timeZone: string): number {
  const w = wallClock(at, timeZone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - (at - (at % 1_000));
}

/**
 * The instant at which the wall clock of `timeZone` shows `wall`, a wall time written as if it
 * were UTC (`Date.UTC(y, m - 1, d, h, mi, s)`).
 */
export function instantOfWallTime(wall: number, timeZone: string): number {
  // Twice: the offset at the guess may differ from the offset at the answer across a DST change.
  const first = wall - offsetAt(wall, timeZone);
  const second = wall - offsetAt(first, timeZone);
  // A wall time that a DST jump skips (midnight in Santiago or Havana on the day DST begins) is
  // shown by no instant: the first answer names the moment the clock jumps past it, while the
  // second falls an hour before it.
  const w = wallClock(second, timeZone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) === wall - (wall % 1_000) ? second : first;
}

/** For nullable timestamps (a document written before the field existed). */
export function formatNullableDateTime(date: Date | null | undefined, timeZone: string): string | null {
  return date instanceof Date ? formatDateTime(date, timeZone) : null;
}

/** A date in an answer, as `formatDateTime` writes it. */
export const dateTimeTextSchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  .meta({ description: 'YYYY-MM-DD HH:MM:SS in APP_TIMEZONE', example: '2026-11-24 09:30:00' });
