import { Router } from 'express';
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
};

function presentMe(user: AccountUser, token: string, timeZone: string): Me {
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

  router.get('/api/me', async (req, res) => {
    const user = userOf(res);
    res.json({ data: presentMe(user, await ctx.users.revealToken(user._id, tokenOf(req)), tz) });
  });

  router.patch('/api/me', async (req, res) => {
    const { time_zone } = validate(mePatch, bodyFields(req.body));
    const user = await ctx.users.setTimeZone(userOf(res)._id, time_zone);
    res.json({ data: presentMe(user, await ctx.users.revealToken(user._id, tokenOf(req)), tz) });
  });

  router.post('/api/me/token', async (_req, res) => {
    const user = userOf(res);
    const token = await ctx.users.rotateToken(user._id);
    res.status(200).json({ data: presentMe(user, token, tz) });
  });

  return router;
}
