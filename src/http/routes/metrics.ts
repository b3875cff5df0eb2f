import { Router } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import { unreadable } from '../openapi/responses.js';
import { refreshQueueGauges } from '../../../jobs/queue-gauges.js';

export const metricsPaths: ZodOpenApiPathsObject = {
  '/metrics': {
    get: {
      tags: ['Operations'],
      operationId: 'metrics',
      summary: 'Prometheus metrics of this process and the queues (keep it off the public internet)',
      responses: {
        200: { description: 'The Prometheus text format.', content: { 'text/plain': { schema: z.string() } } },
        ...unreadable(),
      },
    },
  },
};

/** Prometheus metrics of this process, with the shared queues' depths read at scrape time. */
export function metricsRoutes(ctx: AppContext): Router {
  const router = Router();
  router.get('/metrics', async (_req, res) => {
    await refreshQueueGauges(ctx).catch((err: Error) => ctx.logger.warn({ err: { message: err.message } }, 'queue gauges unavailable'));
    res.set('Content-Type', ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
  });
  return router;
}
