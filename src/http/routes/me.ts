import { Router } from 'express';
import type { AppContext } from '../../context.js';
import { userOf } from '../auth.js';
import { formatDateTime } from '../dates.js';
import type { UserDoc } from '../../models/user.js';

function presentMe(user: UserDoc, token: string, timeZone: string): Record<string, unknown> {
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
    created_at: formatDateTime(user.created_at, timeZone),
    updated_at: formatDateTime(user.updated_at, timeZone),
  };
}

/**
 * Authentication and the rate limit are applied by area-b.ts.
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

  router.get('/api/me', async (_req, res) => {
    const user = userOf(res);
    res.json({ data: presentMe(user, await ctx.users.revealToken(user._id), tz) });
  });

  router.post('/api/me/token', async (_req, res) => {
    const user = userOf(res);
    const token = await ctx.users.rotateToken(user._id);
    res.status(200).json({ data: presentMe(user, token, tz) });
  });

  return router;
}
