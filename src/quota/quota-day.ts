/**
 * The quota's day: the upstream counts its daily quota per calendar day of one time zone
 * (QUOTA_DAY_TZ, UTC unless told otherwise). Every reader and writer of the day's count names the
 * day the same way, so every process meets on the same counter.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(tz, f);
  }
  return f;
}

interface WallClock {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

function wallClock(at: number, tz: string): WallClock {
  const parts = Object.fromEntries(
    formatter(tz)
      .formatToParts(new Date(at))
      .map((p) => [p.type, p.value]),
  );
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
function offsetAt(at: number, tz: string): number {
  const w = wallClock(at, tz);
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  return asUtc - (at - (at % 1_000));
}

/** The instant the wall clock of `tz` shows midnight of the given date. */
function midnight(year: number, month: number, day: number, tz: string): number {
  const guess = Date.UTC(year, month - 1, day);
  // Twice: the offset at the guess may differ from the offset at the answer across a DST change.
  const first = guess - offsetAt(guess, tz);
  const second = guess - offsetAt(first, tz);
  // Where DST begins at midnight (Santiago, Havana) no instant shows 00:00: the day begins when the
  // clock jumps, which the first answer names, while the second falls an hour into the day before.
  const w = wallClock(second, tz);
  return w.year === year && w.month === month && w.day === day ? second : first;
}

export interface QuotaDay {
  /** `YYYY-MM-DD` in the zone: names the day's counters. */
  readonly key: string;
  readonly start: number;
  readonly end: number;
}

/** The quota day that holds `at` (epoch ms) in `tz`. */
export function quotaDayOf(at: number, tz: string): QuotaDay {
  const w = wallClock(at, tz);
  const key = `${w.year}-${String(w.month).padStart(2, '0')}-${String(w.day).padStart(2, '0')}`;
  const start = midnight(w.year, w.month, w.day, tz);
  const next = new Date(Date.UTC(w.year, w.month - 1, w.day + 1));
  const end = midnight(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), tz);
  return { key, start, end };
}

/** The share of the quota day still ahead at `at`, from 1 (midnight) to 0. */
export function dayLeftFraction(day: QuotaDay, at: number): number {
  return Math.min(1, Math.max(0, (day.end - at) / (day.end - day.start)));
}
