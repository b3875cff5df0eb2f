import { Router, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { HttpError } from '../../../core/errors.js';
import { validate } from '../validate.js';
import { endpointUrl, keptQuery, pagedSchema, pageQuerySchema, paginate } from '../paginate.js';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { errors, limited, notModified } from '../openapi/responses.js';
import { createRateLimiter } from '../rate-limit.js';
import { publicCors } from '../cors.js';
import { MAX_QUERY_LENGTH, MAX_QUERY_TERMS, searchFilter, searchTextIssue } from '../../../search/keys.js';
import { listPosts, listUsers, ownersOf } from '../../../directory/listing.js';
import { postResource, postResourceSchema, userResource, userResourceSchema } from '../../../directory/resources.js';
import { NoticedCache } from '../../../db/noticed-cache.js';
import { keepJson, sendKept, type KeptAnswer } from '../kept-answer.js';
import type { KeptQuery } from '../paginate.js';
import { directoryDrops, postPageTags, userPageTags } from '../../../directory/page-tags.js';

/** A kept page and what it shows (src/directory/page-tags.ts). */
interface TaggedPage {
  readonly answer: KeptAnswer;
  readonly tags: readonly string[];
}

/** The public directory of users and recruitment posts (no token, CORS, rate limited). */

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

interface PageOf {
  readonly page: number;
  readonly limit: number;
  readonly q: string | undefined;
  readonly path: string;
  readonly query: KeptQuery;
}

/** What page links carry: the parameters this route reads, nothing a client made up. */
const LINK_PARAMS = Object.keys(listQuery.shape);

const userPage = pagedSchema(userResourceSchema, 'UserPage');
const postPage = pagedSchema(postResourceSchema, 'PostPage');

export const directoryPaths: ZodOpenApiPathsObject = {
  [USERS]: {
    get: {
      tags: ['Public directory'],
      operationId: 'listUsers',
      summary: 'Users, newest first; `q` searches name, title and message',
      requestParams: { query: listQuery },
      responses: { 200: limited('A page of users.', userPage), ...notModified, ...errors(422, 429) },
    },
  },
  [POSTS]: {
    get: {
      tags: ['Public directory'],
      operationId: 'listPosts',
      summary: 'Recruitment posts, newest first; `q` searches title and message',
      requestParams: { query: listQuery },
      responses: { 200: limited('A page of posts.', postPage), ...notModified, ...errors(422, 429) },
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
  const limiter = createRateLimiter(ctx, { name: 'directory', limit: ctx.config.rateLimits.directoryPerMinute });

  // A page is made once and sent as kept bytes until a change to what it shows (any process's)
  // drops it: readers far outnumber writers here, and a page costs a query, its owners and JSON.
  const pages = new NoticedCache<TaggedPage>(ctx.notices, {
    topics: ['users', 'posts'],
    ttlMs: ctx.config.directory.cacheTtlMs,
    maxEntries: 2_000,
    maxSize: 64 * 1024 * 1024,
    sizeOf: (p) => p.answer.body.length,
    tagsOf: (p) => p.tags,
    drops: directoryDrops,
    count: (outcome) => ctx.metrics.cacheReads.inc({ cache: 'directory', outcome }),
  });
  ctx.resources.own('directory page cache', pages, (p) => p.close());

  /** The kept page of a list, made by `make` when none is kept; a page names its request in full. */
  const answer = (req: Request, res: Response, list: string, make: (page: PageOf) => Promise<{ body: unknown; tags: string[] }>) => {
    const { page, limit, q } = validate(listQuery, req.query);
    const path = endpointUrl(req, appUrl);
    const query = keptQuery(req.query, LINK_PARAMS);
    const key = JSON.stringify([list, path, query, page, limit, q ?? null]);
    return pages
      .get(key, async () => {
        const { body, tags } = await make({ page, limit, q, path, query });
        return { answer: keepJson(req, body), tags };
      })
      .then((kept) => sendKept(res, kept!.answer));
  };

  router.get(USERS, cors, limiter, (req, res) =>
    answer(req, res, 'users', async ({ page, limit, q, path, query }) => {
      const { items, total } = await listUsers(ctx.mongo, { page, limit, search: searchFilter(q) });
      const body = paginate({ items: items.map((u) => userResource(u, tz)), total, page, perPage: limit, path, query });
      return { body, tags: userPageTags(items, q !== undefined) };
    }),
  );

  router.get(POSTS, cors, limiter, (req, res) =>
    answer(req, res, 'posts', async ({ page, limit, q, path, query }) => {
      const { items, total } = await listPosts(ctx.mongo, { page, limit, search: searchFilter(q) });
      const owners = await ownersOf(ctx.mongo, items);
      const body = paginate({
        items: items.map((p) => postResource(p, owners.get(p.user_id.toString()), tz)),
        total,
        page,
        perPage: limit,
        path,
        query,
      });
      return { body, tags: postPageTags(items, q !== undefined) };
    }),
  );

  for (const path of [USERS, POSTS]) {
    router.options(path, cors);
    router.all(path, cors, methodNotAllowed(path));
  }
  return router;
}
