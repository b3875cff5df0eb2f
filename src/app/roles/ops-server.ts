import type { AppContext } from '../context.js';
import { buildApp } from '../http/app.js';
import { listen } from '../../lifecycle/http-server.js';
import { metricsPortRoutes } from '../http/routes/metrics.js';

/**
 * Worker and scheduler processes have no API, but operators still scrape and probe them: with
 * METRICS_PORT set they serve /metrics, /healthz and /readyz (and /version) there. So does the api
 * role, which then keeps /metrics off its public port.
 */
export async function startOpsServer(ctx: AppContext, role: string): Promise<void> {
  const port = ctx.config.metrics.port;
  if (port === undefined) return;
  const running = await listen(buildApp(ctx, [metricsPortRoutes]), port, ctx.config.http.host);
  ctx.resources.own(`${role} metrics server`, running, (s) => s.close());
  ctx.logger.info({ url: running.url, role }, 'metrics and health listening');
}
