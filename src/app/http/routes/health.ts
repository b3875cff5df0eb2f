import { Router } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import { json, unreadable } from '../openapi/responses.js';
import { pingMongo } from '../../../db/mongo.js';
import { pingRedis } from '../../../db/redis.js';
import { createRateLimiter } from '../rate-limit.js';

const PROBE_TIMEOUT_MS = 1_500;

const readySchema = z
  .object({
    status: z.enum(['ok', 'unavailable']),
    message: z.string().optional().meta({ description: 'Set while the process shuts down.' }),
    checks: z.object({ mongodb: z.string(), redis: z.string() }).meta({ description: '"ok", or why the dependency did not answer.' }),
  })
  .meta({ id: 'Readiness' });

export const healthPaths: ZodOpenApiPathsObject = {
  '/healthz': {
    get: {
      tags: ['Operations'],
      operationId: 'liveness',
      summary: 'Liveness: the process answers',
      responses: { 200: json('Alive.', z.object({ status: z.literal('ok') })), ...unreadable() },
    },
  },
  '/readyz': {
    get: {
      tags: ['Operations'],
      operationId: 'readiness',
      summary: 'Readiness: MongoDB and Redis answer and the process is not shutting down',
      responses: {
        200: json('Ready.', readySchema),
        503: json('Not ready; `checks` names what failed.', readySchema),
        ...unreadable(429),
      },
    },
  },
};

/**
 * Liveness (the process answers) and readiness (its dependencies answer). Each readiness answer
 * pings MongoDB and Redis, so one address may ask RATE_LIMIT_READYZ times a minute: far more than
 * any probe, far less than a loop.
 */
export function healthRoutes(ctx: Pick<AppContext, 'config' | 'mongo' | 'redis' | 'redisPrefix' | 'logger' | 'resources'>): Router {
  const router = Router();
  const probeLimit = createRateLimiter(ctx, { name: 'readyz', limit: ctx.config.rateLimits.readyzPerMinute, perProcess: true });
  router.get('/healthz', (_req, res) => {
    res.status(200).json({ status: 'ok' });
  });
  router.get('/readyz', probeLimit, async (_req, res) => {
    const [mongodb, redis] = await Promise.all([
      pingMongo(ctx.mongo, PROBE_TIMEOUT_MS).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
      pingRedis(ctx.redis, PROBE_TIMEOUT_MS).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
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
