import { Router } from 'express';
import type { AppContext } from '../../context.js';
import { refreshQueueGauges } from '../../metrics/queue-gauges.js';

/** Prometheus metrics of this process, with the shared queues' depths read at scrape time. */
export function metricsRoutes(ctx: AppContext): Router {
  const router = Router();
  router.get('/metrics', async (_req, res) => {
    await refreshQueueGauges(ctx).catch((err: Error) => ctx.logger.warn({ err: { message: err.message } }, 'queue gauges unavailable'));
    res.set('Content-Type', ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
  });
  return router;
}
