import { Router } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import { json, unreadable } from '../openapi/responses.js';
import { pingMongo } from '../../../db/mongo.js';
import { pingRedis } from '../../../db/redis.js';
import { createRateLimiter } from '../rate-limit.js';
import type { CountryBreakers } from '../../../quota/breaker.js';

const PROBE_TIMEOUT_MS = 1_500;

const upstreamStateSchema = z
  .object({
    state: z.enum(['closed', 'open']),
    kind: z.enum(['throttled', 'credential', 'eligibility', 'configuration']).optional(),
    reason: z.string().optional().meta({ description: "The upstream's own word for the refusal, e.g. AssociateNotEligible." }),
    since: z.iso.datetime().optional(),
    next_probe_at: z.iso.datetime().optional(),
  })
  .meta({ id: 'UpstreamState' });

const readySchema = z
  .object({
    status: z.enum(['ok', 'unavailable']),
    message: z.string().optional().meta({ description: 'Set while the process shuts down.' }),
    checks: z.object({ mongodb: z.string(), redis: z.string() }).meta({ description: '"ok", or why the dependency did not answer.' }),
    upstream: z
      .record(z.string(), upstreamStateSchema)
      .optional()
      .meta({
        description:
          "Each country's breaker: `open` while the upstream refuses the country (its calls stop, a probe goes out on a backoff). " +
          'An open breaker does not make the process unready: the other countries serve.',
      }),
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
export function healthRoutes(
  ctx: Pick<AppContext, 'config' | 'mongo' | 'redis' | 'redisPrefix' | 'logger' | 'resources'> & {
    breakers: Pick<CountryBreakers, 'status'>;
  },
): Router {
  const router = Router();
  const probeLimit = createRateLimiter(ctx, { name: 'readyz', limit: ctx.config.rateLimits.readyzPerMinute, perProcess: true });
  router.get('/healthz', (_req, res) => {
    res.status(200).json({ status: 'ok' });
  });
  router.get('/readyz', probeLimit, async (_req, res) => {
    const [mongodb, redis, upstream] = await Promise.all([
      pingMongo(ctx.mongo, PROBE_TIMEOUT_MS).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
      pingRedis(ctx.redis, PROBE_TIMEOUT_MS).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
      // With Redis away the breakers cannot be read: `checks` says why, and they are left out.
      upstreamStates(ctx).catch(() => undefined),
    ]);
    const checks = { mongodb, redis };
    const ready = mongodb === 'ok' && redis === 'ok' && !ctx.resources.closing;
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ok' : 'unavailable',
      ...(ctx.resources.closing ? { message: 'shutting down' } : {}),
      checks,
      ...(upstream ? { upstream } : {}),
    });
  });
  return router;
}

async function upstreamStates(ctx: Pick<AppContext, 'config'> & { breakers: Pick<CountryBreakers, 'status'> }) {
  const states = await Promise.all(
    ctx.config.countries.map(async (country) => {
      const b = await ctx.breakers.status(country);
      return [
        country,
        b.state === 'closed'
          ? { state: b.state }
          : {
              state: b.state,
              kind: b.kind,
              reason: b.reason,
              since: new Date(b.since).toISOString(),
              next_probe_at: new Date(b.probeAt).toISOString(),
            },
      ] as const;
    }),
  );
  return Object.fromEntries(states);
}
