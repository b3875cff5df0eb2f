// Numbers, prices and dates in the browser's locale (ja-JP: ￥1,980 and 2026/11/24 10:00; en-US:
// ¥1,980 and Nov 24, 2026, 10:00 AM), through Intl.

/** `amount` in the currency's minor units (yen, cents), as the API gives it. */
export function formatPrice(amount, currency) {
  if (amount === null || amount === undefined) return 'no offer';
  if (!currency) return formatNumber(amount);
  try {
    const format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
    return format.format(amount / 10 ** format.resolvedOptions().maximumFractionDigits);
  } catch {
    return `${formatNumber(amount)} ${currency}`;
  }
}

export function formatNumber(n) {
  return n === null || n === undefined ? '—' : new Intl.NumberFormat().format(n);
}

const WALL_CLOCK_RE = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/**
 * The API's `YYYY-MM-DD HH:MM:SS` (a wall-clock time in the server's APP_TIMEZONE) in the browser's
 * date format. It is shown as that same wall-clock time: the zone is the server's, not the reader's.
 */
export function formatDateTime(text) {
  const m = WALL_CLOCK_RE.exec(text ?? '');
  if (!m) return text ?? '—';
  const [, y, mo, d, h, mi, s] = m.map(Number);
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(at);
}

/** `<time datetime>`'s value for the same text (ISO 8601, no zone: a local time). */
export const isoOf = (text) => (WALL_CLOCK_RE.test(text ?? '') ? text.replace(' ', 'T') : '');
