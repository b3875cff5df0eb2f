import type { AppContext } from '../context.js';
import { closeRedis, createRedis } from '../../db/redis.js';
import { createUpstream, createUpstreamShared } from '../../upstream/factory.js';
import { instrumentPort } from '../../upstream/instrumented.js';
import type { UpstreamPort } from '../../upstream/port.js';
import type { Country } from '../../core/identifiers.js';
import { governPort, permitBeforeSend } from '../../quota/governed-port.js';
import { createPermitScopes } from '../../quota/permit-scope.js';
import { startBreakerProbes } from '../../quota/breaker-probes.js';
import { startWorkers, type RunningWorkers } from '../../../workers/runner.js';
import { startGlobalWorker } from '../../../workers/global-runner.js';
import { deliveryJob } from '../../../jobs/deliver.js';
import { drainWorkers } from '../../../workers/drain.js';

/** What the rest of shutdown (queues, Redis, MongoDB) needs after the workers have drained. */
const AFTER_DRAIN_MS = 1_500;

/**
 * The worker role: BullMQ workers on each country's queues, calling the upstream of that country,
 * and the webhook deliveries' worker. Every request takes its permit from the quota governor in the
 * class and rank of the job that makes it (read from the job's permit scope); the ports share
 * connections and tokens. On shutdown every worker stops taking jobs at once and all drain in
 * parallel under one deadline (workers/drain.ts), then their Redis connection and the upstream's
 * connections close.
 */
export async function startWorkerRole(ctx: AppContext, opts: { simulatorUrl?: string } = {}): Promise<RunningWorkers> {
  const shared = ctx.resources.own('upstream connections', createUpstreamShared(), (s) => s.close());
  const scopes = createPermitScopes();
  const ports = new Map<Country, UpstreamPort>();
  for (const country of ctx.config.workers.countries) {
    const beforeSend = permitBeforeSend(country, ctx.quota, scopes, (fair) => {
      void ctx.fair.started(fair.lane, fair.tag).catch(() => undefined);
    });
    const port = createUpstream(ctx.config, country, { simulatorUrl: opts.simulatorUrl, shared, beforeSend });
    ports.set(country, governPort(instrumentPort(port, ctx.metrics), country, { governor: ctx.quota, breakers: ctx.breakers, scopes }));
  }
  ctx.resources.own(
    'breaker probes',
    startBreakerProbes({
      breakers: ctx.breakers,
      governor: ctx.quota,
      ports,
      scopes,
      logger: ctx.logger,
      timeoutMs: ctx.config.workers.jobTimeoutMs,
    }),
    (p) => p.close(),
  );
  // The first call of each country need not wait for its token.
  shared.warm();
  const connection = ctx.resources.own('Redis (workers)', createRedis(ctx.redisTarget, 'blocking', ctx.logger, 'worker'), closeRedis);
  const upstream = (country: Country): UpstreamPort => {
    const port = ports.get(country);
    if (!port) throw new Error(`no upstream for ${country}`);
    return port;
  };
  const logger = ctx.logger.child({ role: 'worker' });
  let closingSince = Number.POSITIVE_INFINITY;
  ctx.resources.stopping.addEventListener('abort', () => (closingSince = Date.now()), { once: true });
  const running = await startWorkers(ctx, connection, upstream, scopes, logger);
  const deliveries = startGlobalWorker(deliveryJob, { ...ctx, logger, shutdownMs: ctx.config.workers.shutdownMs }, connection);
  // Owned before the delivery worker has started, so a signal during start-up drains what runs.
  ctx.resources.own('workers', running, async (r) => {
    // One deadline for every worker: WORKER_SHUTDOWN_MS, and never past what SHUTDOWN_TIMEOUT_MS
    // leaves once the rest of shutdown is counted.
    const now = Date.now();
    const end = Math.min(now + ctx.config.workers.shutdownMs, Math.min(closingSince, now) + ctx.config.shutdownTimeoutMs - AFTER_DRAIN_MS);
    const ms = Math.max(100, end - now);
    const d = await deliveries.catch(() => undefined);
    await Promise.all([r.close(ms), d ? drainWorkers([d.worker], ms, logger).then(() => d.close()) : undefined]);
  });
  await deliveries;
  return running;
}
