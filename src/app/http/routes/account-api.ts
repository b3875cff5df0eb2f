import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../../context.js';
import { authenticate, userKey } from '../auth.js';
import { createRateLimiter } from '../rate-limit.js';
import { authFailureGuard } from '../auth-failures.js';
import { meRoutes } from './me.js';
import { summaryRoutes } from './summary.js';
import { watchRoutes } from './watch.js';
import { worldRoutes } from './world.js';
import { dealsRoutes } from './deals.js';
import { forcedUpdateRoutes } from './forced-update.js';
import { alertRoutes } from './alerts.js';
import { webhookRoutes } from './webhooks.js';
import { deliveryRoutes } from './deliveries.js';

export const ACCOUNT_API_PATHS = ['/api/me', '/api/watch', '/api/world', '/api/alerts', '/api/webhooks', '/api/deliveries', '/api/events'];

/**
 * Every answer is one account's data, or says something about a token: no cache, shared or private,
 * may keep it. Set first, so refusals (401, 422, 429) carry it too.
 */
const noStore: RequestHandler = (_req, res, next) => {
  res.set('Cache-Control', 'no-store');
  next();
};

/**
 * The account API: every route needs the API token, and each account has a rate limit counted in Redis
 * (shared by every api process). The forced update spends the upstream quota, so it has a stricter
 * limit of its own on top; so has a token rotation, which every api process's account cache hears. Failed token checks are counted per client address before any of it,
 * so tokens cannot be guessed at will (auth-failures.ts).
 */
export function accountApiRoutes(ctx: AppContext): Router {
  const router = Router();
  const limits = ctx.config.rateLimits;
  router.use(
    ACCOUNT_API_PATHS,
    noStore,
    ...authFailureGuard(ctx).around(authenticate(ctx)),
    createRateLimiter(ctx, { name: 'api', limit: limits.apiPerMinute, key: userKey }),
  );
  router.use('/api/world/update', createRateLimiter(ctx, { name: 'update', limit: limits.updatePerMinute, key: userKey }));
  router.post(
    ['/api/me/token', '/api/me/feed-token'],
    createRateLimiter(ctx, { name: 'token-rotation', limit: limits.tokenRotationsPerHour, windowMs: 3_600_000, key: userKey }),
  );
  router.use(meRoutes(ctx));
  router.use(summaryRoutes(ctx));
  router.use(watchRoutes(ctx));
  router.use(forcedUpdateRoutes(ctx));
  // Before the world routes: `/api/world/deals` is its own list, not a product path.
  router.use(dealsRoutes(ctx));
  router.use(worldRoutes(ctx));
  router.use(alertRoutes(ctx));
  router.use(webhookRoutes(ctx));
  router.use(deliveryRoutes(ctx));
  return router;
}
