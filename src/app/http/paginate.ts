import { z } from 'zod';
import type { Request } from 'express';
import { validate } from './validate.js';

/**
 * Laravel's LengthAwarePaginator as its API resources render it (`{data, links, meta}`), for the
 * clients written against the original service. The rules: `last_page` is at least
 * 1; `from`/`to` are 1-based and null on an empty page; the page is not clamped, so a page past the
 * end is empty with `prev` pointing one page back; `prev`/`next` are null at the ends. Unlike
 * Laravel's default, links keep the other parameters the route reads (`q`, `limit`, …), with
 * `page` always last; parameters the route does not read are dropped, so a long query string is
 * not copied into every link of the answer.
 */

const pageLinksSchema = z
  .object({ first: z.string(), last: z.string(), prev: z.string().nullable(), next: z.string().nullable() })
  .meta({ id: 'PageLinks', description: 'URLs of other pages, each with the page parameter last.' });
export type PageLinks = z.infer<typeof pageLinksSchema>;

const metaLinkSchema = z.object({ url: z.string().nullable(), label: z.string(), active: z.boolean() });
export type MetaLink = z.infer<typeof metaLinkSchema>;

const count = z.number().int().nonnegative();
const pageMetaSchema = z
  .object({
    current_page: count,
    from: count.nullable(),
    last_page: count,
    links: z.array(metaLinkSchema),
    path: z.string(),
    per_page: count,
    to: count.nullable(),
    total: count,
  })
  .meta({ id: 'PageMeta' });
export type PageMeta = z.infer<typeof pageMetaSchema>;

export interface Paginated<T> {
  readonly data: readonly T[];
  readonly links: PageLinks;
  readonly meta: PageMeta;
}

/** The envelope's schema for one kind of record; `id` names it among the document's components. */
export function pagedSchema<T extends z.ZodType>(item: T, id: string) {
  return z.object({ data: z.array(item), links: pageLinksSchema, meta: pageMetaSchema }).meta({ id, description: 'One page of a list.' });
}

/** Query parameters kept in page links: values as the 'simple' query parser gives them. */
export type KeptQuery = Readonly<Record<string, string | readonly string[]>>;

export interface PageInput<T> {
  readonly items: readonly T[];
  readonly total: number;
  readonly page: number;
  readonly perPage: number;
  /** Absolute URL of the endpoint, no query (see `endpointUrl`). */
  readonly path: string;
  /** Other parameters to carry in every link; a `page` in it is ignored. */
  readonly query?: KeptQuery;
}

// PHP's rawurlencode (http_build_query with PHP_QUERY_RFC3986): only A-Z a-z 0-9 - _ . ~ stay.
function rfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function pageUrl(path: string, query: KeptQuery, page: number): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (key === 'page') continue;
    // Repeated parameters go out repeated, which our 'simple' query parser reads back as they came.
    for (const v of typeof value === 'string' ? [value] : value) parts.push(`${rfc3986(key)}=${rfc3986(v)}`);
  }
  parts.push(`page=${page}`);
  return `${path}?${parts.join('&')}`;
}

/** Laravel's UrlWindow with onEachSide 3: every page below 14 pages, else a window with "..." gaps. */
function pageWindow(current: number, last: number): (number | '...')[] {
  const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const onEachSide = 3;
  if (last < onEachSide * 2 + 8) return range(1, last);
  const window = onEachSide + 4;
  if (current <= window) return [...range(1, window + onEachSide), '...', last - 1, last];
  if (current > last - window) return [1, 2, '...', ...range(last - (window + onEachSide - 1), last)];
  return [1, 2, '...', ...range(current - onEachSide, current + onEachSide), '...', last - 1, last];
}

export function paginate<T>(input: PageInput<T>): Paginated<T> {
  const { items, total, page, perPage, path } = input;
  const query = input.query ?? {};
  const url = (p: number): string => pageUrl(path, query, p);
  const lastPage = Math.max(Math.ceil(total / perPage), 1);
  const from = items.length ? (page - 1) * perPage + 1 : null;
  const to = from === null ? null : from + items.length - 1;
  const prev = page > 1 ? url(page - 1) : null;
  const next = page < lastPage ? url(page + 1) : null;
  const links: MetaLink[] = [
    { url: prev, label: '&laquo; Previous', active: false },
    ...pageWindow(page, lastPage).map((p): MetaLink =>
      p === '...' ? { url: null, label: '...', active: false } : { url: url(p), label: String(p), active: p === page },
    ),
    { url: next, label: 'Next &raquo;', active: false },
  ];
  return {
    data: items,
    links: { first: url(1), last: url(lastPage), prev, next },
    meta: { current_page: page, from, last_page: lastPage, links, path, per_page: perPage, to, total },
  };
}

/**
 * The endpoint's absolute URL without query, trailing slashes trimmed (Laravel's `$request->url()`).
 * The base is APP_URL when set; otherwise the request's own scheme and host, which honour
 * X-Forwarded-Proto/-Host only from the proxies TRUST_PROXY names.
 */
export function endpointUrl(req: Request, appUrl: string | undefined): string {
  const base = appUrl ?? `${req.protocol}://${req.host}`;
  const pathname = new URL(req.originalUrl, 'http://x').pathname.replace(/\/+$/, '');
  return `${base}${pathname}`;
}

// Never carried, whatever a route lists: a link must not spread the caller's credential.
const NEVER_KEPT = new Set(['page', 'api_token']);

/**
 * The parameters of the request that page links carry (`PageInput.query`): those named in `known`
 * (the keys of the route's query schema), in the order the request gave them, minus `page` and
 * the token.
 */
export function keptQuery(query: Request['query'], known: readonly string[]): KeptQuery {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(query)) {
    if (NEVER_KEPT.has(key) || !known.includes(key)) continue;
    if (typeof value === 'string') out[key] = value;
    else if (Array.isArray(value) && value.every((v) => typeof v === 'string')) out[key] = value as string[];
  }
  return out;
}

export interface PageOptions {
  /** `limit` when the request has none (the public directory: 20, the account API: 50). */
  readonly defaultLimit: number;
  /** Largest `limit` accepted; more is a 422, not silently clamped. */
  readonly maxLimit: number;
}

/**
 * The largest `page` a request may name (PHP's 32-bit int). A page past the end of its list is an
 * empty page, whatever its number; how deep a page inside a list may be is src/db/page.ts's MAX_PAGE.
 */
const MAX_PAGE_PARAM = 2_147_483_647;

/**
 * A query-string integer: absent or empty means the default; anything that is not one base-10
 * integer (a repeated parameter arrives as an array) or is out of range is a 422 on that field.
 */
export function intParam(min: number, max: number, fallback: number, description?: string) {
  const doc = { type: 'integer', minimum: min, maximum: max, default: fallback } as const;
  return z
    .unknown()
    .optional()
    .meta({ ...(description ? { description } : {}), override: doc })
    .transform((v, ctx): number => {
      if (v === undefined || v === '') return fallback;
      const s = typeof v === 'string' ? v.trim() : undefined;
      if (s === undefined || !/^[+-]?\d+$/.test(s)) {
        ctx.addIssue({ code: 'custom', message: 'must be an integer.' });
        return z.NEVER;
      }
      const n = Number(s);
      if (n < min) ctx.addIssue({ code: 'custom', message: `must be at least ${min}.` });
      else if (n > max) ctx.addIssue({ code: 'custom', message: `must not be greater than ${max}.` });
      return n;
    });
}

/** `page` and `limit` as a zod object, to `.extend()` with an endpoint's other parameters. */
export function pageQuerySchema(opts: PageOptions) {
  return z.object({
    page: intParam(1, MAX_PAGE_PARAM, 1),
    limit: intParam(1, opts.maxLimit, opts.defaultLimit),
  });
}

/** `page` and `limit` alone, or a 422 naming the field. */
export function parsePageQuery(query: unknown, opts: PageOptions): { page: number; limit: number } {
  return validate(pageQuerySchema(opts), query);
}
