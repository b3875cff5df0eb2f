import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import { unreadable } from '../openapi/responses.js';
import { refreshQueueGauges } from '../queue-gauges.js';
import { refreshUpstreamGauges } from '../upstream-gauges.js';
import { atMostEvery } from '../../../metrics/at-most-every.js';
import { bearerToken, sameHostOnly } from '../metrics-access.js';

/**
 * How often the queue gauges are read from Redis at most (each read is every queue's job counts
 * and the head of each queue): scrapes in between are answered from the last read, so the cost
 * to Redis does not grow with the scrape rate.
 */
const QUEUE_GAUGES_EVERY_MS = 5_000;

export const metricsPaths: ZodOpenApiPathsObject = {
  '/metrics': {
    get: {
      tags: ['Operations'],
      operationId: 'metrics',
      summary: 'Prometheus metrics of this process and the queues (for the operator, not the public)',
      description:
        'With METRICS_TOKEN set, it needs `Authorization: Bearer <METRICS_TOKEN>`. With METRICS_PORT set, the api serves it on that ' +
        'port only. With neither, only to clients on the same host. Queue gauges are at most 5 s old.',
      responses: {
        200: { description: 'The Prometheus text format.', content: { 'text/plain': { schema: z.string() } } },
        ...unreadable(401, 404),
      },
    },
  },
};

/** Where a router serves /metrics: the api's public port, or the port the operator set aside. */
type Exposure = 'public' | 'metrics-port';

function metricsRouter(ctx: AppContext, exposure: Exposure): Router {
  const router = Router();
  const { port: metricsPort, token: metricsToken } = ctx.config.metrics;
  // The operator gave /metrics a port of its own (src/app/roles/ops-server.ts): not on the public one.
  if (exposure === 'public' && metricsPort !== undefined) return router;
  const access: RequestHandler[] = metricsToken ? [bearerToken(metricsToken)] : exposure === 'public' ? [sameHostOnly] : [];
  const refreshQueues = atMostEvery(QUEUE_GAUGES_EVERY_MS, () =>
    Promise.all([
      refreshQueueGauges(ctx).catch((err: Error) => ctx.logger.warn({ err: { message: err.message } }, 'queue gauges unavailable')),
      refreshUpstreamGauges(ctx).catch((err: Error) => ctx.logger.warn({ err: { message: err.message } }, 'upstream gauges unavailable')),
    ]).then(() => undefined),
  );
  router.get('/metrics', ...access, async (_req, res) => {
    await refreshQueues();
    res.set('Content-Type', ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
  });
  return router;
}

/** /metrics on the api's public port: unless METRICS_PORT moves it, behind METRICS_TOKEN or for this host only. */
export function metricsRoutes(ctx: AppContext): Router {
  return metricsRouter(ctx, 'public');
}

/** /metrics on METRICS_PORT (every role): behind METRICS_TOKEN when it is set. */
export function metricsPortRoutes(ctx: AppContext): Router {
  return metricsRouter(ctx, 'metrics-port');
}
