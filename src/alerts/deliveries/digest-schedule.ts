import { DateTime } from '../../core/luxon.js';
import type { QuietHours } from '../../models/endpoint.js';
import type { DigestSettings } from '../endpoints/digest-settings.js';

/**
 * When a fired alert goes out, in the account's time zone (luxon, so daylight saving and zones
 * off the hour, such as Asia/Kolkata, are the zone's own): an instant endpoint sends at once, an
 * hourly one at the next hour's start, a daily one at the next `digest_at`; and none within quiet
 * hours, which push what falls in them to their end. Quiet hours include their start and exclude
 * their end, so a digest due at the start waits for the end.
 */

const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

function local(at: Date, zone: string): DateTime {
  return DateTime.fromJSDate(at, { zone });
}

/** Whether `at` is within the quiet hours, in `zone`. */
export function inQuietHours(quiet: QuietHours | null, zone: string, at: Date): boolean {
  if (!quiet) return false;
  const t = local(at, zone);
  const m = t.hour * 60 + t.minute;
  const start = minutesOf(quiet.start);
  const end = minutesOf(quiet.end);
  return start < end ? m >= start && m < end : m >= start || m < end;
}

/**
 * The first moment after `at` whose local time is `hhmm`. A time that a clock change skips that
 * day is luxon's (moved forward by the gap).
 */
export function nextLocalTime(hhmm: string, zone: string, at: Date): Date {
  const hour = Number(hhmm.slice(0, 2));
  const minute = Number(hhmm.slice(3, 5));
  const start = local(at, zone);
  let day = start.startOf('day');
  for (let i = 0; i < 3; i++, day = day.plus({ days: 1 })) {
    const candidate = day.set({ hour, minute, second: 0, millisecond: 0 });
    if (candidate.toMillis() > at.getTime()) return candidate.toJSDate();
  }
  // Unreachable: one of three consecutive days has the time after `at`.
  return start.plus({ days: 1 }).toJSDate();
}

/** Whether a delivery firing at `at` waits for a digest rather than going now. */
export function holds(settings: DigestSettings, zone: string, at: Date): boolean {
  return settings.delivery !== 'instant' || inQuietHours(settings.quiet_hours, zone, at);
}

/** When a delivery fired at `firedAt` and held goes out: its window's close, out of quiet hours. */
export function dueAt(settings: DigestSettings, zone: string, firedAt: Date): Date {
  let due: Date;
  if (settings.delivery === 'hourly') due = local(firedAt, zone).startOf('hour').plus({ hours: 1 }).toJSDate();
  else if (settings.delivery === 'daily' && settings.digest_at) due = nextLocalTime(settings.digest_at, zone, firedAt);
  else due = firedAt;
  const quiet = settings.quiet_hours;
  return quiet && inQuietHours(quiet, zone, due) ? nextLocalTime(quiet.end, zone, due) : due;
}
