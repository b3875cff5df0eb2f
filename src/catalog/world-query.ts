import { z } from 'zod';
import type { Country } from '../core/identifiers.js';
import { ASIN_RE, isValidEan13 } from '../core/identifiers.js';
import { MAX_QUERY_LENGTH, MAX_QUERY_TERMS, searchTextIssue } from '../search/keys.js';
import { instantOfWallTime } from '../core/dates.js';

/** One query-string value: a repeated parameter (an array) or a bracketed object is refused. */
export const single = (what: string) =>
  z
    .unknown()
    .optional()
    .transform((v, ctx): string | undefined => {
      if (v === undefined) return undefined;
      if (typeof v !== 'string') {
        ctx.addIssue({ code: 'custom', message: `must be a single ${what}.` });
        return z.NEVER;
      }
      return v;
    });

/** `country`: one code or a comma list of the configured countries; absent means all of them. */
export function countriesParam(configured: readonly Country[]) {
  return single('value')
    .transform((v, ctx): Country[] => {
      if (v === undefined || v.trim() === '') return [...configured];
      const codes = [...new Set(v.split(',').map((c) => c.trim().toUpperCase()))];
      const unknown = codes.filter((c) => !configured.includes(c as Country));
      if (unknown.length || codes.includes('')) {
        ctx.addIssue({ code: 'custom', message: `must be one of ${configured.join(', ')}, or several separated by commas.` });
        return z.NEVER;
      }
      return codes as Country[];
    })
    .meta({
      description: `One country code or several separated by commas; absent means all of them (${configured.join(', ')}).`,
      override: { type: 'string', example: configured.join(',') },
    });
}

/** `country` where exactly one is required (a product's history). */
export function requiredCountryParam(configured: readonly Country[]) {
  return single('value')
    .transform((v, ctx): Country => {
      const code = v?.trim().toUpperCase() ?? '';
      if (code === '') {
        ctx.addIssue({ code: 'custom', message: 'is required.' });
        return z.NEVER;
      }
      if (!configured.includes(code as Country)) {
        ctx.addIssue({ code: 'custom', message: `must be exactly one of ${configured.join(', ')}.` });
        return z.NEVER;
      }
      return code as Country;
    })
    .meta({ description: 'Exactly one country code.', override: { type: 'string', enum: [...configured] } });
}

/** A time `YYYY-MM-DD HH:MM:SS` as answers write them, read in `timeZone`. */
export function dateTimeParam(timeZone: string, description: string) {
  return single('time')
    .transform((v, ctx): Date | undefined => {
      if (v === undefined || v === '') return undefined;
      const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/.exec(v);
      const [y, mo, d, h, mi, s] = (m ?? []).slice(1).map(Number) as number[];
      const wall = m ? new Date(Date.UTC(y!, mo! - 1, d!, h!, mi!, s!)) : undefined;
      const valid = wall !== undefined && wall.getUTCMonth() === mo! - 1 && wall.getUTCDate() === d! && h! < 24 && mi! < 60 && s! < 60;
      if (!valid) {
        ctx.addIssue({ code: 'custom', message: 'must be a time in the format YYYY-MM-DD HH:MM:SS.' });
        return z.NEVER;
      }
      return fromWallTime(wall, timeZone);
    })
    .meta({
      description,
      override: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}$', example: '2026-11-24 09:30:00' },
    });
}

/** `country` where exactly one is allowed (the forced update); `fallback` when absent. */
export function oneCountryParam(configured: readonly Country[], fallback: Country) {
  return single('value')
    .transform((v, ctx): Country => {
      if (v === undefined || v.trim() === '') return fallback;
      const code = v.trim().toUpperCase();
      if (!configured.includes(code as Country)) {
        ctx.addIssue({ code: 'custom', message: `must be exactly one of ${configured.join(', ')}.` });
        return z.NEVER;
      }
      return code as Country;
    })
    .meta({
      description: `Exactly one country code; ${fallback} when absent.`,
      override: { type: 'string', enum: [...configured], default: fallback },
    });
}

export const searchParam = single('string')
  .superRefine((v, ctx) => {
    const issue = v === undefined ? undefined : searchTextIssue(v);
    if (issue) ctx.addIssue({ code: 'custom', message: issue });
  })
  .meta({
    description: `Title words (at most ${MAX_QUERY_TERMS}), or an ASIN or a JAN/EAN matched exactly.`,
    override: { type: 'string', maxLength: MAX_QUERY_LENGTH },
  });

/** Whether a search text is an identifier we can match exactly. */
export function identifierOf(q: string): { asin?: string; ean?: string } {
  const t = q.trim().toUpperCase();
  if (ASIN_RE.test(t)) return { asin: t };
  if (isValidEan13(t)) return { ean: t };
  return {};
}

/** `since`: a calendar date `YYYY-MM-DD`; the instant it starts in `timeZone`. */
export function sinceParam(timeZone: string) {
  return single('date')
    .transform((v, ctx): Date | undefined => {
      if (v === undefined || v === '') return undefined;
      const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
      const date = m ? new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : undefined;
      if (!m || !date || date.getUTCMonth() !== Number(m[2]) - 1 || date.getUTCDate() !== Number(m[3])) {
        ctx.addIssue({ code: 'custom', message: 'must be a date in the format YYYY-MM-DD.' });
        return z.NEVER;
      }
      return fromWallTime(date, timeZone);
    })
    .meta({
      description: 'Only products created on or after this day (midnight in APP_TIMEZONE).',
      override: { type: 'string', format: 'date' },
    });
}

/** The instant whose wall time in `timeZone` is `wall` read as UTC (midnight of a day, or any time of it). */
function fromWallTime(wall: Date, timeZone: string): Date {
  return new Date(instantOfWallTime(wall.getTime(), timeZone));
}
