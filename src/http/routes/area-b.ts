import { Router } from 'express';
import type { AppContext } from '../../context.js';
import { authenticate, userKey } from '../auth.js';
import { createRateLimiter } from '../rate-limit.js';
import { meRoutes } from './me.js';
import { watchRoutes } from './watch.js';
import { worldRoutes } from './world.js';
import { worldUpdateRoutes } from './world-update.js';

export const AREA_B_PATHS = ['/api/me', '/api/watch', '/api/world'];

/**
 * Area B: every route needs the API token, and each account has a rate limit counted in Redis
 * (shared by every api process). The forced update spends the upstream quota, so it has a stricter
 * limit of its own on top.
 */
export function areaBRoutes(ctx: AppContext): Router {
  const router = Router();
  const limits = ctx.config.workers.rateLimit;
  router.use(AREA_B_PATHS, authenticate(ctx), createRateLimiter(ctx, { name: 'api', limit: limits.apiPerMinute, key: userKey }));
  router.use('/api/world/update', createRateLimiter(ctx, { name: 'update', limit: limits.updatePerMinute, key: userKey }));
  router.use(meRoutes(ctx));
  router.use(watchRoutes(ctx));
  router.use(worldUpdateRoutes(ctx));
  router.use(worldRoutes(ctx));
  return router;
}
