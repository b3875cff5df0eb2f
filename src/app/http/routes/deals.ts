import { Router } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import type { Config } from '../../../../config/env.js';
import { validate } from '../validate.js';
import { endpointUrl, intParam, keptQuery, paginate, pagedSchema, pageQuerySchema } from '../paginate.js';
import { ACCOUNT_API_SECURITY, errors, limited, notModified } from '../openapi/responses.js';
import { requiredCountryParam, single } from '../../../catalog/world-query.js';
import { dealRecordSchema, MAX_DEALS_DEPTH, presentDeal } from '../../../catalog/deals.js';
import { DEAL_BASES, DEAL_WINDOWS, type DealBasis, type DealWindow } from '../../../core/price-levels.js';
import { keepJson, RecentAnswers, sendKept } from '../kept-answer.js';

/** As the world lists: default 50, at most 100. */
const PAGE = { defaultLimit: 50, maxLimit: 100 } as const;
const MAX_AMOUNT = 1_000_000_000_000;
const MAX_RANK = 1_000_000_000;

export const basisParam = single('value')
  .transform((v, ctx): DealBasis => {
    if (v === undefined || v === '') return 'avg';
    if (!(DEAL_BASES as readonly string[]).includes(v)) {
      ctx.addIssue({ code: 'custom', message: `must be one of ${DEAL_BASES.join(', ')}.` });
      return z.NEVER;
    }
    return v as DealBasis;
  })
  .meta({
    description: "What the price is compared with: the window's lowest (`low`), average (`avg`) or highest (`high`).",
    override: { type: 'string', enum: [...DEAL_BASES], default: 'avg' },
  });

export const daysParam = intParam(1, 90, 30, 'The window in days, ending today: 7, 30 or 90.').transform((v, ctx): DealWindow => {
  if (!(DEAL_WINDOWS as readonly number[]).includes(v)) {
    ctx.addIssue({ code: 'custom', message: `must be one of ${DEAL_WINDOWS.join(', ')}.` });
    return z.NEVER;
  }
  return v as DealWindow;
});

const minDropParam = single('number')
  .transform((v, ctx): number | undefined => {
    if (v === undefined || v === '') return undefined;
    const n = /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : NaN;
    if (!(n > 0 && n <= 100)) {
      ctx.addIssue({ code: 'custom', message: 'must be a number greater than 0 and at most 100.' });
      return z.NEVER;
    }
    return n;
  })
  .meta({ description: 'Least drop below the level, in percent.', override: { type: 'number', exclusiveMinimum: 0, maximum: 100 } });

/** An optional integer bound: absent is no bound. */
function boundParam(min: number, max: number, description: string) {
  return intParam(min, max, -1, description).transform((n) => (n === -1 ? undefined : n));
}

const nodeParam = single('value')
  .superRefine((v, ctx) => {
    if (v !== undefined && !/^\d{1,20}$/.test(v)) ctx.addIssue({ code: 'custom', message: 'must be a browse node id (digits).' });
  })
  .transform((v) => (v === '' ? undefined : v))
  .meta({ description: 'Only products listed under this browse node.', override: { type: 'string', pattern: '^\\d{1,20}$' } });

export function dealsInput(config: Pick<Config, 'countries'>) {
  return pageQuerySchema(PAGE)
    .extend({
      country: requiredCountryParam(config.countries),
      basis: basisParam,
      days: daysParam,
      min_drop: minDropParam,
      min_price: boundParam(0, MAX_AMOUNT, 'Least price, in minor units (yen, cents).'),
      max_price: boundParam(0, MAX_AMOUNT, 'Highest price, in minor units.'),
      min_rank: boundParam(1, MAX_RANK, 'Best sales rank (the smallest number).'),
      max_rank: boundParam(1, MAX_RANK, 'Worst sales rank (the largest number).'),
      node: nodeParam,
    })
    .superRefine((q, ctx) => {
      if (q.min_price !== undefined && q.max_price !== undefined && q.min_price > q.max_price)
        ctx.addIssue({ code: 'custom', path: ['max_price'], message: 'must be at least min_price.' });
      if (q.min_rank !== undefined && q.max_rank !== undefined && q.min_rank > q.max_rank)
        ctx.addIssue({ code: 'custom', path: ['max_rank'], message: 'must be at least min_rank.' });
    });
}

export const dealPageSchema = pagedSchema(dealRecordSchema, 'DealPage');

export function dealsPaths(config: Pick<Config, 'countries'>): ZodOpenApiPathsObject {
  return {
    '/api/world/deals': {
      get: {
        tags: ['World catalogue'],
        security: ACCOUNT_API_SECURITY,
        operationId: 'listWorldDeals',
        summary: 'Products whose price is furthest below their own recent level, largest drop first',
        description:
          "A product is a deal by `low` when its price is its window's lowest and something in the window was above it (the drop " +
          'is from the lowest such level), ' +
          'by `avg` or `high` when it is below the average or highest price of the window; figures are as of its last refresh. ' +
          `No total is counted: \`meta.total\` counts the deals up to this page, and one more when a next page has some. The list goes ` +
          `${MAX_DEALS_DEPTH} deals deep (a deeper page is a 422).`,
        requestParams: { query: dealsInput(config) },
        responses: { 200: limited('A page of deals.', dealPageSchema), ...notModified, ...errors(401, 422, 429) },
      },
    },
  };
}

/** The deals list, shared by every user like the world lists. Authenticated by account-api.ts. */
export function dealsRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  const input = dealsInput(ctx.config);
  const known = Object.keys(input.shape);
  // Polled like the world lists: a page is made at most once per WORLD_PAGE_TTL per api process.
  const recent = new RecentAnswers(ctx.config.world.pageTtlMs);

  router.get('/api/world/deals', async (req, res) => {
    const q = validate(input, req.query);
    const path = endpointUrl(req, ctx.config.http.appUrl);
    const query = keptQuery(req.query, known);
    const filter = {
      basis: q.basis,
      days: q.days,
      minDrop: q.min_drop,
      minPrice: q.min_price,
      maxPrice: q.max_price,
      minRank: q.min_rank,
      maxRank: q.max_rank,
      node: q.node,
    };
    const key = JSON.stringify([path, query, q]);
    const answer = await recent.get(key, async () => {
      const found = await ctx.deals.list({ ...filter, country: q.country, page: q.page, limit: q.limit });
      const offset = (q.page - 1) * q.limit;
      const total = offset + found.items.length + (found.more ? 1 : 0);
      const items = found.items.map((p) => presentDeal(p, filter, tz));
      return keepJson(req, paginate({ items, total, page: q.page, perPage: q.limit, path, query }));
    });
    sendKept(res, answer);
  });
  return router;
}
