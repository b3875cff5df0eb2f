import { Router } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { userOf } from '../auth.js';
import { bodyFields, validate } from '../validate.js';
import { NotFoundError } from '../../../core/errors.js';
import { asinSchema, browseNodeSchema, eanSchema } from '../../../core/identifiers.js';
import { eanImportSchema, presentImport, presentWatch, watchEntrySchema } from '../../../watch/present.js';
import { endpointUrl, keptQuery, paginate, pagedSchema, pageQuerySchema } from '../paginate.js';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { ACCOUNT_API_SECURITY, bodyToken, errors, limited } from '../openapi/responses.js';
import { single } from '../../../catalog/world-query.js';

const asinText = z
  .string({ error: 'must be a string.' })
  .pipe(asinSchema)
  .meta(asinSchema.meta() ?? {});
const priority = z
  .union([z.literal(0), z.literal(1), z.literal('0'), z.literal('1')], { error: 'must be 0 or 1.' })
  .transform((p) => (Number(p) === 1 ? 1 : 0) as 0 | 1);

const watchAsinBody = z.object({ asin: asinText, priority: priority.default(0) });
const watchEanBody = z.object({ ean: z.string({ error: 'must be a string of 13 digits.' }).pipe(eanSchema) });
const watchBrowseBody = z.object({ browse: browseNodeSchema });
const asinParam = z.object({ asin: asinText });
const browseParam = z.object({ browse: browseNodeSchema });
const importParam = z.object({ id: z.string().meta({ description: 'The import id that POST /api/watch/ean answered.' }) });
const listQuery = pageQuerySchema({ defaultLimit: 50, maxLimit: 100 }).extend({
  type: single('value')
    .refine((v) => v === undefined || v === 'asin' || v === 'browse', 'must be asin or browse.')
    .meta({ description: 'Only entries of this kind.', override: { type: 'string', enum: ['asin', 'browse'] } }),
});

/** What page links carry: the parameters the list reads, nothing a client made up. */
const LINK_PARAMS = Object.keys(listQuery.shape);

const watchAnswer = z.object({ data: watchEntrySchema, created: z.boolean() }).meta({ id: 'WatchAnswer' });
const removedAnswer = z.object({ message: z.string(), data: watchEntrySchema }).meta({ id: 'WatchRemoved' });
const importAnswer = z
  .object({ data: eanImportSchema, created: z.boolean().meta({ description: 'false: a pending import of this code was answered.' }) })
  .meta({ id: 'ImportAnswer' });
const watchPage = pagedSchema(watchEntrySchema, 'WatchPage');

/** The watchlist's operations for the OpenAPI document, from the schemas the routes validate with. */
export const watchPaths: ZodOpenApiPathsObject = (() => {
  const common = { tags: ['Watchlist'], security: ACCOUNT_API_SECURITY };
  const body = (schema: z.ZodObject) => ({
    required: true,
    content: {
      'application/json': { schema: schema.extend(bodyToken) },
      'application/x-www-form-urlencoded': { schema: schema.extend(bodyToken) },
    },
  });
  const changed = (what: string) => ({
    201: limited(`${what} added.`, watchAnswer),
    200: limited(`${what} was watched already; its entry as it is now.`, watchAnswer),
  });
  return {
    '/api/watch': {
      get: {
        ...common,
        operationId: 'listWatches',
        summary: "The caller's watch entries, newest first",
        requestParams: { query: listQuery },
        responses: { 200: limited('A page of watch entries.', watchPage), ...errors(401, 422, 429) },
      },
    },
    '/api/watch/asin': {
      post: {
        ...common,
        operationId: 'watchAsin',
        summary: 'Watch an ASIN, or change its priority',
        requestBody: body(watchAsinBody),
        responses: { ...changed('The ASIN'), ...errors(401, 413, 422, 429) },
      },
    },
    '/api/watch/asin/{asin}': {
      delete: {
        ...common,
        operationId: 'unwatchAsin',
        summary: 'Stop watching an ASIN',
        requestParams: { path: asinParam },
        responses: { 200: limited('Removed; the entry as it was.', removedAnswer), ...errors(401, 404, 422, 429) },
      },
    },
    '/api/watch/ean': {
      post: {
        ...common,
        operationId: 'importEan',
        summary: 'Import a JAN/EAN: its ASINs are looked up in every country and watched',
        requestBody: body(watchEanBody),
        responses: { 202: limited('The import has started; read it at /api/watch/ean/{id}.', importAnswer), ...errors(401, 413, 422, 429) },
      },
    },
    '/api/watch/ean/{id}': {
      get: {
        ...common,
        operationId: 'getImport',
        summary: 'An EAN import and what it found',
        requestParams: { path: importParam },
        responses: { 200: limited('The import.', z.object({ data: eanImportSchema })), ...errors(401, 404, 429) },
      },
    },
    '/api/watch/browse': {
      post: {
        ...common,
        operationId: 'watchBrowse',
        summary: 'Watch a browse node (category): its products are crawled and watched',
        requestBody: body(watchBrowseBody),
        responses: { ...changed('The browse node'), ...errors(401, 413, 422, 429) },
      },
    },
    '/api/watch/browse/{browse}': {
      delete: {
        ...common,
        operationId: 'unwatchBrowse',
        summary: 'Stop watching a browse node',
        requestParams: { path: browseParam },
        responses: { 200: limited('Removed; the entry as it was.', removedAnswer), ...errors(401, 404, 422, 429) },
      },
    },
  };
})();

/** Account API watchlist: add and remove ASINs, EANs (as imports) and browse nodes. Authenticated by account-api.ts. */
export function watchRoutes(ctx: AppContext): Router {
  const router = Router();
  const service = ctx.watches;
  const tz = ctx.config.timeZone;

  // Beyond the contract: the caller's own entries, newest first, in the paged envelope.
  router.get('/api/watch', async (req, res) => {
    const q = validate(listQuery, req.query);
    const { items, total } = await service.list(userOf(res)._id, {
      kind: q.type as 'asin' | 'browse' | undefined,
      page: q.page,
      limit: q.limit,
    });
    res.json(
      paginate({
        items: items.map((w) => presentWatch(w, tz)),
        total,
        page: q.page,
        perPage: q.limit,
        path: endpointUrl(req, ctx.config.http.appUrl),
        query: keptQuery(req.query, LINK_PARAMS),
      }),
    );
  });

  router.post('/api/watch/asin', async (req, res) => {
    const { asin, priority: p } = validate(watchAsinBody, bodyFields(req.body));
    const { entry, created } = await service.watchAsin(userOf(res)._id, asin, p);
    res.status(created ? 201 : 200).json({ data: presentWatch(entry, tz), created });
  });

  router.delete('/api/watch/asin/:asin', async (req, res) => {
    const { asin } = validate(asinParam, req.params);
    const removed = await service.unwatchAsin(userOf(res)._id, asin);
    if (!removed) throw new NotFoundError('The ASIN is not in your watchlist.');
    res.status(200).json({ message: 'Removed.', data: presentWatch(removed, tz) });
  });

  router.post('/api/watch/ean', async (req, res) => {
    const { ean } = validate(watchEanBody, bodyFields(req.body));
    const { entry, created } = await ctx.imports.start(userOf(res)._id, ean);
    res.status(202).json({ data: presentImport(entry, tz), created });
  });

  router.get('/api/watch/ean/:id', async (req, res) => {
    const { id } = validate(importParam, req.params);
    const found = await ctx.imports.find(userOf(res)._id, id);
    if (!found) throw new NotFoundError('No such import.');
    res.json({ data: presentImport(found, tz) });
  });

  router.post('/api/watch/browse', async (req, res) => {
    const { browse } = validate(watchBrowseBody, bodyFields(req.body));
    const { entry, created } = await service.watchBrowse(userOf(res)._id, browse);
    res.status(created ? 201 : 200).json({ data: presentWatch(entry, tz), created });
  });

  router.delete('/api/watch/browse/:browse', async (req, res) => {
    const { browse } = validate(browseParam, req.params);
    const removed = await service.unwatchBrowse(userOf(res)._id, browse);
    if (!removed) throw new NotFoundError('The browse node is not in your watchlist.');
    res.status(200).json({ message: 'Removed.', data: presentWatch(removed, tz) });
  });

  return router;
}
