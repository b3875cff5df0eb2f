import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { validate } from '../validate.js';
import { NotFoundError } from '../../../core/errors.js';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { Config } from '../../../../config/env.js';
import { endpointUrl, keptQuery, paginate, pagedSchema, pageQuerySchema, type KeptQuery } from '../paginate.js';
import { productRecordSchema } from '../../../core/product.js';
import { ACCOUNT_API_SECURITY, errors, limited, notModified } from '../openapi/responses.js';
import { asinSchema, eanSchema } from '../../../core/identifiers.js';
import { countriesParam, dateTimeParam, requiredCountryParam, searchParam, sinceParam } from '../../../catalog/world-query.js';
import { historyPointRecordSchema, presentPoint } from '../../../catalog/history.js';
import { presentProduct } from '../../../catalog/present.js';
import { keepJson, RecentAnswers, sendKept } from '../kept-answer.js';
import type { ProductPage } from '../../../catalog/world-catalog.js';
import { historyCsvContent, historyCsvResponse, prefersCsv, sendHistoryCsv } from '../history-csv.js';

/** Account API lists: default 50 (the contract), at most 100 (ours: the contract leaves it open). */
const PAGE = { defaultLimit: 50, maxLimit: 100 } as const;

/** What the world routes read, for the routes and for the OpenAPI document alike. */
export function worldInputs(config: Pick<Config, 'countries' | 'timeZone'>) {
  const country = countriesParam(config.countries);
  const range = {
    country: requiredCountryParam(config.countries),
    since: dateTimeParam(config.timeZone, 'Only points at or after this time (APP_TIMEZONE).'),
    until: dateTimeParam(config.timeZone, 'Only points at or before this time (APP_TIMEZONE).'),
  };
  return {
    list: pageQuerySchema(PAGE).extend({ country, search: searchParam }),
    fresh: pageQuerySchema(PAGE).extend({ country, since: sinceParam(config.timeZone) }),
    one: z.object({ country }),
    asinPath: z.object({ asin: asinSchema }),
    eanPath: z.object({ ean: eanSchema }),
    history: pageQuerySchema(PAGE).extend(range),
    // The export is every point of the range: no page to choose, and a page or limit sent is ignored.
    historyExport: z.object(range),
  };
}

export const productPageSchema = pagedSchema(productRecordSchema, 'ProductPage');
export const historyPageSchema = pagedSchema(historyPointRecordSchema, 'HistoryPage');
export const productListSchema = z.object({ data: z.array(productRecordSchema) }).meta({ id: 'ProductList' });

export function worldPaths(config: Pick<Config, 'countries' | 'timeZone'>): ZodOpenApiPathsObject {
  const input = worldInputs(config);
  const page = limited('A page of history points; with `Accept: text/csv`, every point of the range as CSV.', historyPageSchema);
  const historyPageResponse = { ...page, content: { ...page.content, ...historyCsvContent } };
  const common = { tags: ['World catalogue'], security: ACCOUNT_API_SECURITY };
  return {
    '/api/world': {
      get: {
        ...common,
        operationId: 'listWorld',
        summary: 'Products the upstream has answered for, newest update first',
        requestParams: { query: input.list },
        responses: { 200: limited('A page of product records.', productPageSchema), ...notModified, ...errors(401, 422, 429) },
      },
    },
    '/api/world/new': {
      get: {
        ...common,
        operationId: 'listWorldNew',
        summary: 'Products created on or after a day, newest first',
        requestParams: { query: input.fresh },
        responses: { 200: limited('A page of product records.', productPageSchema), ...notModified, ...errors(401, 422, 429) },
      },
    },
    '/api/world/asin/{asin}': {
      get: {
        ...common,
        operationId: 'getWorldAsin',
        summary: 'One product by ASIN, one record per requested country',
        requestParams: { path: input.asinPath, query: input.one },
        responses: { 200: limited('The product in each requested country that has it.', productListSchema), ...errors(401, 404, 422, 429) },
      },
    },
    '/api/world/asin/{asin}/history': {
      get: {
        ...common,
        operationId: 'getWorldAsinHistory',
        summary: "A watched product's price and availability history in one country, oldest first",
        description:
          'One point per refresh that saw its price, currency, availability, Buy Box or sales rank change, and one at its first ' +
          'observation; kept HISTORY_DAYS. 404 when nobody watches the ASIN in that country. With `Accept: text/csv` (preferred ' +
          'to application/json) it answers what `history.csv` does: every point of the range as CSV, `page` and `limit` ' +
          'ignored.',
        requestParams: { path: input.asinPath, query: input.history },
        responses: { 200: historyPageResponse, ...errors(401, 404, 422, 429) },
      },
    },
    '/api/world/asin/{asin}/history.csv': {
      get: {
        ...common,
        operationId: 'getWorldAsinHistoryCsv',
        summary: "A watched product's whole history in one country as a CSV file, oldest first",
        description:
          'The points of the JSON history route, every one kept (HISTORY_DAYS) within `since`/`until`, not a page: `page` and ' +
          '`limit` do not apply and are ignored when sent. Streamed as it is read; `Content-Disposition` names the file ' +
          '`<asin>-<country>-history.csv`. Errors answer in JSON. 404 when nobody watches the ASIN in that country.',
        requestParams: { path: input.asinPath, query: input.historyExport },
        responses: { 200: historyCsvResponse, ...errors(401, 404, 422, 429) },
      },
    },
    '/api/world/ean/{ean}': {
      get: {
        ...common,
        operationId: 'getWorldEan',
        summary: 'The products listing a JAN/EAN',
        requestParams: { path: input.eanPath, query: input.one },
        responses: {
          200: limited('The products listing this JAN/EAN in the requested countries.', productListSchema),
          ...errors(401, 404, 422, 429),
        },
      },
    },
  };
}

/** The world catalogue, shared by every user: lists, one product by ASIN or by JAN/EAN. Authenticated by account-api.ts. */
export function worldRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  const input = worldInputs(ctx.config);
  const present = (found: ProductPage, q: { page: number; limit: number }, path: string, query: KeptQuery) =>
    paginate({ items: found.items.map((p) => presentProduct(p, tz)), total: found.total, page: q.page, perPage: q.limit, path, query });

  // The lists are the same for every user and are polled: a page is made at most once per
  // WORLD_PAGE_TTL per api process (its items that old at most), and sent as kept bytes meanwhile.
  const recent = new RecentAnswers(ctx.config.world.pageTtlMs);
  /** Sends the kept page of a list, read by `read` when none is kept; a page names its request in full. */
  const sendPage = async <Q extends { page: number; limit: number }>(
    req: Request,
    res: Response,
    schema: z.ZodObject,
    q: Q,
    read: (q: Q) => Promise<ProductPage>,
  ) => {
    const path = endpointUrl(req, ctx.config.http.appUrl);
    const query = keptQuery(req.query, Object.keys(schema.shape));
    const key = JSON.stringify([path, query, q]);
    sendKept(res, await recent.get(key, async () => keepJson(req, present(await read(q), q, path, query))));
  };

  router.get('/api/world', (req, res) =>
    sendPage(req, res, input.list, validate(input.list, req.query), (q) =>
      ctx.world.list({ countries: q.country, search: q.search, page: q.page, limit: q.limit }),
    ),
  );

  router.get('/api/world/new', (req, res) =>
    sendPage(req, res, input.fresh, validate(input.fresh, req.query), (q) =>
      ctx.world.created({ countries: q.country, since: q.since, page: q.page, limit: q.limit }),
    ),
  );

  router.get('/api/world/asin/:asin', async (req, res) => {
    const { asin } = validate(input.asinPath, req.params);
    const { country } = validate(input.one, req.query);
    const found = await ctx.world.byAsin(asin, country);
    if (found.length === 0) throw new NotFoundError('No product with this ASIN in the requested countries.');
    res.json({ data: found.map((p) => presentProduct(p, tz)) });
  });

  const sendCsv = async (req: Request, res: Response) => {
    const { asin } = validate(input.asinPath, req.params);
    const q = validate(input.historyExport, req.query);
    await sendHistoryCsv(ctx, res, q.country, asin, q);
  };

  router.get('/api/world/asin/:asin/history.csv', sendCsv);

  router.get('/api/world/asin/:asin/history', async (req, res) => {
    res.vary('Accept');
    if (prefersCsv(req)) return sendCsv(req, res);
    const { asin } = validate(input.asinPath, req.params);
    const q = validate(input.history, req.query);
    const found = await ctx.world.history(q.country, asin, q);
    if (!found) throw new NotFoundError('Nobody watches this ASIN in this country.');
    res.json(
      paginate({
        items: found.items.map((p) => presentPoint(p, tz)),
        total: found.total,
        page: q.page,
        perPage: q.limit,
        path: endpointUrl(req, ctx.config.http.appUrl),
        query: keptQuery(req.query, Object.keys(input.history.shape)),
      }),
    );
  });

  router.get('/api/world/ean/:ean', async (req, res) => {
    const { ean } = validate(input.eanPath, req.params);
    const { country } = validate(input.one, req.query);
    const found = await ctx.world.byEan(ean, country);
    if (found.length === 0) throw new NotFoundError('No product with this JAN/EAN in the requested countries.');
    res.json({ data: found.map((p) => presentProduct(p, tz)) });
  });

  return router;
}
