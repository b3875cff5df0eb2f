import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { HttpError } from '../../errors/index.js';
import { validate } from '../validate.js';
import { endpointUrl, keptQuery, pagedSchema, pageQuerySchema, paginate } from '../paginate.js';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { errors, limited } from '../openapi/responses.js';
import { createRateLimiter } from '../rate-limit.js';
import { publicCors } from '../cors.js';
import { MAX_QUERY_LENGTH, MAX_QUERY_TERMS, searchFilter, searchTextIssue } from '../../search/keys.js';
import { listPosts, listUsers, ownersOf } from '../../directory/listing.js';
import { postResource, postResourceSchema, userResource, userResourceSchema } from '../../directory/resources.js';

/** Area C: the public directory of users and recruitment posts (no token, CORS, rate limited). */

const USERS = '/api/user';
const POSTS = '/api/post';
const METHODS = ['GET', 'HEAD'];

const listQuery = pageQuerySchema({ defaultLimit: 20, maxLimit: 100 }).extend({
  q: z
    .unknown()
    .optional()
    .transform((v, ctx): string | undefined => {
      if (v === undefined) return undefined;
      if (typeof v !== 'string') {
        ctx.addIssue({ code: 'custom', message: 'must be a string.' });
        return z.NEVER;
      }
      const issue = searchTextIssue(v);
      if (issue) ctx.addIssue({ code: 'custom', message: issue });
      return v;
    })
    .meta({
      description: `Keywords; every one must match. At most ${MAX_QUERY_TERMS} words.`,
      override: { type: 'string', maxLength: MAX_QUERY_LENGTH },
    }),
});

/** What page links carry: the parameters this route reads, nothing a client made up. */
const LINK_PARAMS = Object.keys(listQuery.shape);

const userPage = pagedSchema(userResourceSchema, 'UserPage');
const postPage = pagedSchema(postResourceSchema, 'PostPage');

export const directoryPaths: ZodOpenApiPathsObject = {
  [USERS]: {
    get: {
      tags: ['Area C: directory'],
      operationId: 'listUsers',
      summary: 'Users, newest first; `q` searches name, title and message',
      requestParams: { query: listQuery },
      responses: { 200: limited('A page of users.', userPage), ...errors(422, 429) },
    },
  },
  [POSTS]: {
    get: {
      tags: ['Area C: directory'],
      operationId: 'listPosts',
      summary: 'Recruitment posts, newest first; `q` searches title and message',
      requestParams: { query: listQuery },
      responses: { 200: limited('A page of posts.', postPage), ...errors(422, 429) },
    },
  },
};

/** Laravel answers other methods on a known route with 405 and the methods it has. */
function methodNotAllowed(path: string): RequestHandler {
  return (req, _res, next) =>
    next(
      new HttpError(405, `The ${req.method} method is not supported for route ${path.slice(1)}. Supported methods: GET, HEAD.`, {
        Allow: METHODS.join(', '),
      }),
    );
}

export function directoryRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  const appUrl = ctx.config.http.appUrl;
  const cors = publicCors({ methods: METHODS });
  // Both lists share one budget per client, as Laravel's throttle:60,1 on a route group does.
  const limiter = createRateLimiter(ctx, { name: 'directory', limit: ctx.config.directory.rateLimitPerMinute });

  router.get(USERS, cors, limiter, async (req, res) => {
    const { page, limit, q } = validate(listQuery, req.query);
    const { items, total } = await listUsers(ctx.mongo, { page, limit, search: searchFilter(q) });
    res.json(
      paginate({
        items: items.map((u) => userResource(u, tz)),
        total,
        page,
        perPage: limit,
        path: endpointUrl(req, appUrl),
        query: keptQuery(req.query, LINK_PARAMS),
      }),
    );
  });

  router.get(POSTS, cors, limiter, async (req, res) => {
    const { page, limit, q } = validate(listQuery, req.query);
    const { items, total } = await listPosts(ctx.mongo, { page, limit, search: searchFilter(q) });
    const owners = await ownersOf(ctx.mongo, items);
    res.json(
      paginate({
        items: items.map((p) => postResource(p, owners.get(p.user_id.toString()), tz)),
        total,
        page,
        perPage: limit,
        path: endpointUrl(req, appUrl),
        query: keptQuery(req.query, LINK_PARAMS),
      }),
    );
  });

  for (const path of [USERS, POSTS]) {
    router.options(path, cors);
    router.all(path, cors, methodNotAllowed(path));
  }
  return router;
}
