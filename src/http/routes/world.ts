import { Router } from 'express';
import mongoose from 'mongoose';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { validate } from '../validate.js';
import { NotFoundError } from '../../errors/index.js';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { Config } from '../../../config/env.js';
import { endpointUrl, keptQuery, paginate, pagedSchema, pageQuerySchema } from '../paginate.js';
import { productRecordSchema } from '../../catalog/product.js';
import { AREA_B_SECURITY, errors, limited } from '../openapi/responses.js';
import { asinSchema, eanSchema } from '../../catalog/identifiers.js';
import { countriesParam, identifierOf, searchParam, sinceParam } from '../../catalog/world-query.js';
import { PRODUCT_HIDDEN_FIELDS, presentProduct } from '../../catalog/present.js';
import { productModel } from '../../models/product.js';
import { searchFilter } from '../../search/keys.js';
import { TotalCache } from '../../catalog/total-cache.js';

/** Area B lists: default 50 (the contract), at most 100 (ours: the contract leaves it open). */
const PAGE = { defaultLimit: 50, maxLimit: 100 } as const;

/** What the world routes read, for the routes and for the OpenAPI document alike. */
export function worldInputs(config: Pick<Config, 'countries' | 'timeZone'>) {
  const country = countriesParam(config.countries);
  return {
    list: pageQuerySchema(PAGE).extend({ country, search: searchParam }),
    fresh: pageQuerySchema(PAGE).extend({ country, since: sinceParam(config.timeZone) }),
    one: z.object({ country }),
    asinPath: z.object({ asin: asinSchema }),
    eanPath: z.object({ ean: eanSchema }),
  };
}

export const productPageSchema = pagedSchema(productRecordSchema, 'ProductPage');
export const productListSchema = z.object({ data: z.array(productRecordSchema) }).meta({ id: 'ProductList' });

export function worldPaths(config: Pick<Config, 'countries' | 'timeZone'>): ZodOpenApiPathsObject {
  const input = worldInputs(config);
  const common = { tags: ['Area B: world catalogue'], security: AREA_B_SECURITY };
  return {
    '/api/world': {
      get: {
        ...common,
        operationId: 'listWorld',
        summary: 'Products the upstream has answered for, newest update first',
        requestParams: { query: input.list },
        responses: { 200: limited('A page of product records.', productPageSchema), ...errors(401, 422, 429) },
      },
    },
    '/api/world/new': {
      get: {
        ...common,
        operationId: 'listWorldNew',
        summary: 'Products created on or after a day, newest first',
        requestParams: { query: input.fresh },
        responses: { 200: limited('A page of product records.', productPageSchema), ...errors(401, 422, 429) },
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
    '/api/world/ean/{ean}': {
      get: {
        ...common,
        operationId: 'getWorldEan',
        summary: 'The products listing a JAN/EAN',
        requestParams: { path: input.eanPath, query: input.one },
        responses: { 200: limited('The products listing this JAN/EAN in the requested countries.', productListSchema), ...errors(401, 404, 422, 429) },
      },
    },
  };
}

/** The world catalogue, shared by every user: lists, one product by ASIN or by JAN/EAN. Authenticated by area-b.ts. */
export function worldRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  const products = () => productModel(ctx.mongo);
  const input = worldInputs(ctx.config);
  const totals = new TotalCache(ctx.config.world.totalTtlMs);

  /** A page of products matching `filter`, newest first by `field`, in the Laravel envelope. */
  async function page(req: Parameters<Parameters<typeof router.get>[1]>[0], filter: Record<string, unknown>, field: 'updated_at' | 'created_at', pageNo: number, limit: number) {
    const offset = (pageNo - 1) * limit;
    const items = await products().find(filter).sort({ [field]: -1, _id: -1 }).skip(offset).limit(limit).select(PRODUCT_HIDDEN_FIELDS).lean();
    // The filter's JSON names it exactly: the server builds every part of it from parsed input.
    const key = `${field}:${JSON.stringify(filter)}`;
    let total: number;
    if (items.length < limit && (items.length > 0 || offset === 0)) {
      // A page that is not full ends the list: its total needs no count, and is kept for the pages before it.
      total = offset + items.length;
      totals.set(key, total);
    } else {
      // A kept total below what this page shows is out of date: count again. (A page past the end
      // shows nothing, so it proves nothing either.)
      total = await totals.total(key, () => products().countDocuments(filter), items.length ? offset + items.length : 0);
    }
    return paginate({
      items: items.map((p) => presentProduct(p, tz)),
      total,
      page: pageNo,
      perPage: limit,
      path: endpointUrl(req, ctx.config.http.appUrl),
      query: keptQuery(req.query, ['api_token']),
    });
  }

  // Only products the upstream has answered for at least once are listed; a watched product that
  // is still pending (or unknown upstream) is visible through /api/world/asin/{asin}.
  const fetched = { updated_at: mongoose.trusted({ $type: 'date' }) };

  router.get('/api/world', async (req, res) => {
    const q = validate(input.list, req.query);
    const filter: Record<string, unknown> = { country: mongoose.trusted({ $in: q.country }), ...fetched };
    if (q.search !== undefined && q.search.trim() !== '') {
      const words = searchFilter(q.search);
      const id = identifierOf(q.search);
      const alternatives: Record<string, unknown>[] = [];
      if (words.kind === 'match') alternatives.push(words.filter);
      if (id.asin) alternatives.push({ asin: id.asin });
      if (id.ean) alternatives.push({ ean: id.ean });
      if (alternatives.length === 0) return void res.json(await page(req, { _id: null }, 'updated_at', q.page, q.limit));
      filter.$or = alternatives;
    }
    res.json(await page(req, filter, 'updated_at', q.page, q.limit));
  });

  router.get('/api/world/new', async (req, res) => {
    const q = validate(input.fresh, req.query);
    const filter: Record<string, unknown> = { country: mongoose.trusted({ $in: q.country }), ...fetched };
    if (q.since) filter.created_at = mongoose.trusted({ $gte: q.since });
    res.json(await page(req, filter, 'created_at', q.page, q.limit));
  });

  router.get('/api/world/asin/:asin', async (req, res) => {
    const { asin } = validate(input.asinPath, req.params);
    const { country } = validate(input.one, req.query);
    const found = await products().find({ asin, country: mongoose.trusted({ $in: country }) }).sort({ country: 1 }).select(PRODUCT_HIDDEN_FIELDS).lean();
    if (found.length === 0) throw new NotFoundError('No product with this ASIN in the requested countries.');
    res.json({ data: found.map((p) => presentProduct(p, tz)) });
  });

  router.get('/api/world/ean/:ean', async (req, res) => {
    const { ean } = validate(input.eanPath, req.params);
    const { country } = validate(input.one, req.query);
    const found = await products().find({ ean, country: mongoose.trusted({ $in: country }) }).sort({ country: 1, asin: 1 }).select(PRODUCT_HIDDEN_FIELDS).lean();
    if (found.length === 0) throw new NotFoundError('No product with this JAN/EAN in the requested countries.');
    res.json({ data: found.map((p) => presentProduct(p, tz)) });
  });

  return router;
}
