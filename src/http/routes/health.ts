import { Router } from 'express';
import type { AppContext } from '../../context.js';
import { pingMongo } from '../../db/mongo.js';
import { pingRedis } from '../../db/redis.js';

const PROBE_TIMEOUT_MS = 1_500;

/** Liveness (the process answers) and readiness (its dependencies answer). */
export function healthRoutes(ctx: Pick<AppContext, 'mongo' | 'redis' | 'resources'>): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.status(200).json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const [mongodb, redis] = await Promise.all([
      pingMongo(ctx.mongo, PROBE_TIMEOUT_MS).then(() => 'ok', (e: Error) => e.message),
      pingRedis(ctx.redis, PROBE_TIMEOUT_MS).then(() => 'ok', (e: Error) => e.message),
    ]);
    const checks = { mongodb, redis };
    const ready = mongodb === 'ok' && redis === 'ok' && !ctx.resources.closing;
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ok' : 'unavailable',
      ...(ctx.resources.closing ? { message: 'shutting down' } : {}),
      checks,
    });
  });
  return router;
}
