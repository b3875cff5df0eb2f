import { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { Config } from '../../../../config/env.js';
import type { AppContext } from '../../context.js';
import { countrySchema, type Country } from '../../../core/identifiers.js';
import { oneCountryParam } from '../../../catalog/world-query.js';
import { presentProduct } from '../../../catalog/present.js';
import { asinBatchSchema, MAX_ITEMS_PER_CALL } from '../../../upstream/port.js';
import { errors, limited, ACCOUNT_API_SECURITY, bodyToken } from '../openapi/responses.js';
import { userOf } from '../auth.js';
import { validate } from '../validate.js';
import { UpstreamFailedError } from '../../../core/errors.js';
import { productListSchema } from './world.js';

/** `asin`: 1–10 ASINs separated by commas; duplicates count once. */
const asinList = z
  .string({ error: 'must be a list of ASINs separated by commas.' })
  .transform((v, ctx) => {
    const batch = asinBatchSchema.safeParse([
      ...new Set(
        v
          .split(',')
          .map((a) => a.trim().toUpperCase())
          .filter(Boolean),
      ),
    ]);
    if (batch.success) return batch.data;
    // One message on the field itself, not one per element of the list.
    ctx.addIssue({ code: 'custom', message: batch.error.issues[0]?.message ?? 'is invalid.' });
    return z.NEVER;
  })
  .meta({
    description: `1 to ${MAX_ITEMS_PER_CALL} ASINs separated by commas; duplicates count once.`,
    example: 'B00TEST001,B00TEST002',
    override: { type: 'string' },
  });

/** `asin` and `country`, from the query (GET) or the body and the query (POST). */
function updateInput(config: Pick<Config, 'countries'>) {
  const fallback: Country = config.countries.includes('JP') ? 'JP' : config.countries[0]!;
  return z.object({ asin: asinList, country: oneCountryParam(config.countries, fallback) });
}

const queuedAnswer = z
  .object({ message: z.string(), job: z.object({ id: z.string(), country: countrySchema, asins: z.array(z.string()) }) })
  .meta({ id: 'UpdateQueued' });

export function forcedUpdatePaths(config: Pick<Config, 'countries'>): ZodOpenApiPathsObject {
  const input = updateInput(config);
  // A JSON body may give the ASINs as an array as well.
  const asinInBody = asinList.meta({
    override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
      delete jsonSchema.type;
      jsonSchema.anyOf = [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: MAX_ITEMS_PER_CALL }];
    },
  });
  const responses = {
    200: limited('The refreshed records, one per ASIN the upstream knows.', productListSchema),
    202: limited(`Still running after UPDATE_WAIT; the job finishes later.`, queuedAnswer),
    ...errors(401, 413, 422, 429, 502),
  };
  const operation = (method: 'get' | 'post') => ({
    tags: ['World catalogue'],
    security: ACCOUNT_API_SECURITY,
    operationId: method === 'get' ? 'forceUpdate' : 'forceUpdatePost',
    summary: `Refresh up to ${MAX_ITEMS_PER_CALL} ASINs of one country now (spends the upstream quota)`,
    responses,
  });
  const body = input.extend({ asin: asinInBody, ...bodyToken });
  return {
    '/api/world/update': {
      get: { ...operation('get'), requestParams: { query: input } },
      post: {
        ...operation('post'),
        requestBody: {
          required: true,
          content: { 'application/json': { schema: body }, 'application/x-www-form-urlencoded': { schema: body } },
        },
      },
    },
  };
}

/** GET reads the query; POST its body (and the query). A JSON body may give `asin` as an array. */
function inputOf(req: Request): Record<string, unknown> {
  const body =
    req.method === 'POST' && req.body && typeof req.body === 'object' && !Array.isArray(req.body)
      ? { ...(req.body as Record<string, unknown>) }
      : {};
  if (Array.isArray(body.asin) && body.asin.length <= MAX_ITEMS_PER_CALL * 2 && body.asin.every((a) => typeof a === 'string'))
    body.asin = body.asin.join(',');
  return { ...req.query, ...body };
}

/** `GET|POST /api/world/update`: jobs/forced-update.ts does the work; the route reads and answers. */
export function forcedUpdateRoutes(ctx: AppContext): Router {
  const router = Router();
  const schema = updateInput(ctx.config);
  const forceUpdate: RequestHandler = async (req, res) => {
    const { asin, country } = validate(schema, inputOf(req));
    const answer = await ctx.forcedUpdates.request(userOf(res)._id, country, asin).catch((err: unknown) => {
      if (!(err instanceof UpstreamFailedError)) throw err;
      // The failure may quote the upstream's answers and hosts: the log has it, under the request id
      // the client is given to quote.
      req.log.warn({ reason: err.reason, country, asins: asin }, 'forced update failed upstream');
      throw new UpstreamFailedError(err.reason, String(req.id));
    });
    if (answer.kind === 'queued') {
      res.status(202).json({ message: 'The update is queued and will finish later.', job: answer.job });
      return;
    }
    res.json({ data: answer.products.map((p) => presentProduct(p, ctx.config.timeZone)) });
  };
  // Express answers HEAD with the GET handler, which here would spend upstream quota: HEAD is not found.
  router.head('/api/world/update', (_req, _res, next) => next('route'));
  router.get('/api/world/update', forceUpdate);
  router.post('/api/world/update', forceUpdate);
  return router;
}
