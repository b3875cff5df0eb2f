import { Router, type Request } from 'express';
import { DEALS_FEED_PATH } from './feeds.js';
import type { AppContext } from '../../context.js';
import { tokenOf, userOf } from '../auth.js';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { dateTimeTextSchema, formatDateTime } from '../../../core/dates.js';
import { ACCOUNT_API_SECURITY, errors, limited } from '../openapi/responses.js';
import type { AccountUser } from '../../../models/user.js';
import { ianaZoneSchema } from '../../../alerts/endpoints/digest-settings.js';
import { bodyFields, validate } from '../validate.js';
import { bodyToken } from '../openapi/responses.js';

const meSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    avatar: z.string().nullable(),
    title: z.string().nullable(),
    url: z.string().nullable(),
    image: z.string().nullable(),
    tags: z.array(z.string()),
    api_token: z.string().meta({ description: "The account's API token." }),
    deals_feed_url: z.string().meta({
      description:
        "The Atom feed of deals among the account's watched products, under a secret URL for feed readers (which send no " +
        'headers): its `feed_token` is not the API token, grants nothing else and changes with `POST /api/me/feed-token`.',
    }),
    time_zone: z.string().meta({
      description:
        "The IANA time zone of the account's daily digests and quiet hours (PATCH /api/me); the server's APP_TIMEZONE until set.",
    }),
    created_at: dateTimeTextSchema,
    updated_at: dateTimeTextSchema,
  })
  .meta({ id: 'Me' });
type Me = z.infer<typeof meSchema>;

const mePatch = z.object({ time_zone: ianaZoneSchema });
const mePatchBody = mePatch.safeExtend(bodyToken);

export const mePaths: ZodOpenApiPathsObject = {
  '/api/me': {
    get: {
      tags: ['Account'],
      security: ACCOUNT_API_SECURITY,
      operationId: 'getMe',
      summary: "The account's profile and API token (the contract's settings page)",
      responses: { 200: limited('The account; never cached.', z.object({ data: meSchema })), ...errors(401, 429) },
    },
    patch: {
      tags: ['Account'],
      security: ACCOUNT_API_SECURITY,
      operationId: 'updateMe',
      summary: "Set the account's time zone (of its daily digests and quiet hours)",
      description: 'An IANA name such as `Asia/Tokyo` or `Europe/Berlin`; 422 in the usual shape, and nothing changed, for anything else.',
      requestBody: {
        required: true,
        content: { 'application/json': { schema: mePatchBody }, 'application/x-www-form-urlencoded': { schema: mePatchBody } },
      },
      responses: { 200: limited('The account as it now is.', z.object({ data: meSchema })), ...errors(401, 413, 415, 422, 429) },
    },
  },
  '/api/me/token': {
    post: {
      tags: ['Account'],
      security: ACCOUNT_API_SECURITY,
      operationId: 'rotateToken',
      summary: 'Issue a new API token; the old one stops working at once',
      description:
        "Limited per account on its own, on top of the account API's limit: RATE_LIMIT_TOKEN_ROTATION (10) an hour, counted in " +
        "Redis; past it 429 with `Retry-After` and the token unchanged. The operator's `users:token --rotate` is not limited.",
      responses: { 200: limited('The account with its new token.', z.object({ data: meSchema })), ...errors(401, 413, 429) },
    },
  },
  '/api/me/feed-token': {
    post: {
      tags: ['Account'],
      security: ACCOUNT_API_SECURITY,
      operationId: 'rotateFeedToken',
      summary: 'Give the deals feed a new secret URL; the old one stops working at once',
      description: 'Limited like the API token: RATE_LIMIT_TOKEN_ROTATION an hour per account.',
      responses: { 200: limited('The account with its new feed URL.', z.object({ data: meSchema })), ...errors(401, 413, 429) },
    },
  },
};

/** The deals feed's URL with the account's feed token: under APP_URL, else this request's own origin. */
function feedUrl(req: Request, appUrl: string | undefined, feedToken: string): string {
  const base = appUrl ?? `${req.protocol}://${req.host}`;
  return `${base}${DEALS_FEED_PATH}?feed_token=${feedToken}`;
}

function presentMe(user: AccountUser, token: string, dealsFeedUrl: string, timeZone: string): Me {
  return {
    id: user._id.toHexString(),
    name: user.name,
    email: user.email,
    avatar: user.avatar,
    title: user.title,
    url: user.url,
    image: user.image,
    tags: user.tags,
    api_token: token,
    deals_feed_url: dealsFeedUrl,
    time_zone: user.time_zone ?? timeZone,
    created_at: formatDateTime(user.created_at, timeZone),
    updated_at: formatDateTime(user.updated_at, timeZone),
  };
}

/**
 * Authentication and the rate limit are applied by account-api.ts.
 * The contract's "settings page" as an API: the account's profile and token, and a new token.
 * These are the only answers that carry a token, and only to its owner. Never cached.
 */
export function meRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  router.use('/api/me', (_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });

  const appUrl = ctx.config.http.appUrl;
  router.get('/api/me', async (req, res) => {
    const user = userOf(res);
    const [token, feedToken] = await Promise.all([ctx.users.revealToken(user._id, tokenOf(req)), ctx.users.feedToken(user._id)]);
    res.json({ data: presentMe(user, token, feedUrl(req, appUrl, feedToken), tz) });
  });

  router.patch('/api/me', async (req, res) => {
    const { time_zone } = validate(mePatch, bodyFields(req.body));
    const user = await ctx.users.setTimeZone(userOf(res)._id, time_zone);
    res.json({
      data: presentMe(
        user,
        await ctx.users.revealToken(user._id, tokenOf(req)),
        feedUrl(req, appUrl, await ctx.users.feedToken(user._id)),
        tz,
      ),
    });
  });
  router.post('/api/me/token', async (req, res) => {
    const user = userOf(res);
    const token = await ctx.users.rotateToken(user._id);
    res.status(200).json({ data: presentMe(user, token, feedUrl(req, appUrl, await ctx.users.feedToken(user._id)), tz) });
  });

  router.post('/api/me/feed-token', async (req, res) => {
    const user = userOf(res);
    const [token, feedToken] = await Promise.all([ctx.users.revealToken(user._id, tokenOf(req)), ctx.users.rotateFeedToken(user._id)]);
    res.status(200).json({ data: presentMe(user, token, feedUrl(req, appUrl, feedToken), tz) });
  });

  return router;
}
