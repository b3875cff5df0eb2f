/**
 * The quota's day: the upstream counts its daily quota per calendar day of one time zone
 * (QUOTA_DAY_TZ, UTC unless told otherwise). Every reader and writer of the day's count names the
 * day the same way, so every process meets on the same counter.
 */
import { instantOfWallTime, wallClock } from '../core/dates.js';

/** The instant the wall clock of `tz` shows midnight of the given date. */
function midnight(year: number, month: number, day: number, tz: string): number {
  return instantOfWallTime(Date.UTC(year, month - 1, day), tz);
}

export interface QuotaDay {
  /** `YYYY-MM-DD` in the zone: names the day's counters. */
  readonly key: string;
  readonly start: number;
  readonly end: number;
}

/** The last day found per zone: every permit asks, and the answer changes once a day. */
const lastDay = new Map<string, QuotaDay>();

/** The quota day that holds `at` (epoch ms) in `tz`. */
export function quotaDayOf(at: number, tz: string): QuotaDay {
  const last = lastDay.get(tz);
  if (last && at >= last.start && at < last.end) return last;
  const day = dayOf(at, tz);
  lastDay.set(tz, day);
  return day;
}

function dayOf(at: number, tz: string): QuotaDay {
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
