import type { AppContext } from '../context.js';
import { buildApp } from '../http/app.js';
import { listen, type RunningServer } from '../../lifecycle/http-server.js';
import { apiRoutes } from '../http/api-routes.js';
import { startOpsServer } from './ops-server.js';

/** The api role: the version query, the account API, the public directory, health, metrics and Bull Board, over HTTP (metrics on METRICS_PORT when set). */
export async function startApi(ctx: AppContext): Promise<RunningServer> {
  const app = buildApp(ctx, apiRoutes);
  const running = await listen(app, ctx.config.http.port, ctx.config.http.host);
  // Requests in flight finish; the signal handler's deadline bounds how long that may take.
  ctx.resources.own('HTTP server', running, (s) => s.close());
  ctx.logger.info({ url: running.url }, 'api listening');
  // With METRICS_PORT set, /metrics is served there and not on the public port (http/routes/metrics.ts).
  await startOpsServer(ctx, 'api');
  return running;
}
