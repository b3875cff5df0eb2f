import type { AppContext } from '../context.js';
import { closeRedis, createRedis } from '../db/redis.js';
import { createUpstream, createUpstreamShared } from '../upstream/factory.js';
import { instrumentPort } from '../upstream/instrumented.js';
import type { UpstreamPort } from '../upstream/port.js';
import type { Country } from '../catalog/identifiers.js';
import { governPort } from '../quota/governed-port.js';
import { JOB_NAMES, laneOf, priorityOf, type JobName } from '../../jobs/registry.js';
import { startWorkers, type RunningWorkers } from '../../workers/runner.js';
import { startDeliveryWorker } from '../../workers/deliveries.js';

/**
 * The worker role: BullMQ workers on each country's queues, calling the upstream of that country.
 * Each country has a port per job kind, so every request takes its permit from the quota governor in
 * the lane and priority of the job that makes it; the ports share connections and tokens.
 * Opened in this order so that shutdown closes the workers (letting active jobs finish), then their
 * Redis connection, then the upstream's connections.
 */
export async function startWorkerRole(ctx: AppContext, opts: { simulatorUrl?: string } = {}): Promise<RunningWorkers> {
  const shared = ctx.resources.own('upstream connections', createUpstreamShared(), (s) => s.close());
  const ports = new Map<string, UpstreamPort>();
  for (const country of ctx.config.countries) {
    for (const job of JOB_NAMES) {
      const beforeSend = async (): Promise<void> => void (await ctx.quota.permit(country, laneOf(job), priorityOf(job)));
      const port = createUpstream(ctx.config, country, { simulatorUrl: opts.simulatorUrl, shared, beforeSend });
      ports.set(`${country}:${job}`, governPort(instrumentPort(port, ctx.metrics), ctx.quota, country));
    }
  }
  const connection = ctx.resources.own('Redis (workers)', createRedis(ctx.redisUrl, 'blocking', ctx.logger, 'worker'), closeRedis);
  const upstream = (country: Country, job: JobName): UpstreamPort => {
    const port = ports.get(`${country}:${job}`);
    if (!port) throw new Error(`no upstream for ${country}`);
    return port;
  };
  const running = await startWorkers(ctx, connection, upstream, ctx.logger.child({ role: 'worker' }));
  ctx.resources.own('workers', running, (r) => r.close());
  const deliveries = await startDeliveryWorker(
    { ...ctx, logger: ctx.logger.child({ role: 'worker' }), shutdownMs: ctx.config.workers.shutdownMs },
    connection,
  );
  ctx.resources.own('delivery worker', deliveries, (d) => d.close());
  return running;
}
