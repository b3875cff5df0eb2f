import type { AppContext } from '../context.js';
import { closeRedis, createRedis } from '../db/redis.js';
import { createUpstream, createUpstreamShared } from '../upstream/factory.js';
import { instrumentPort } from '../upstream/instrumented.js';
import type { UpstreamPort } from '../upstream/port.js';
import type { Country } from '../catalog/identifiers.js';
import { startWorkers, type RunningWorkers } from '../../workers/runner.js';

/**
 * The worker role: one BullMQ worker per country queue, calling the upstream of that country.
 * Opened in this order so that shutdown closes the workers (letting active jobs finish), then their
 * Redis connection, then the upstream's connections.
 */
export async function startWorkerRole(ctx: AppContext, opts: { simulatorUrl?: string } = {}): Promise<RunningWorkers> {
  const shared = ctx.resources.own('upstream connections', createUpstreamShared(), (s) => s.close());
  const ports = new Map<Country, UpstreamPort>();
  for (const country of ctx.config.countries) {
    const port = createUpstream(ctx.config, country, { simulatorUrl: opts.simulatorUrl, shared });
    ports.set(country, instrumentPort(port, ctx.metrics, ctx.usage));
  }
  const connection = ctx.resources.own('Redis (workers)', createRedis(ctx.redisUrl, 'blocking', ctx.logger, 'worker'), closeRedis);
  const running = await startWorkers(
    {
      mongo: ctx.mongo,
      config: ctx.config,
      workers: ctx.config.workers,
      jobs: ctx.jobs,
      upstream: (country) => {
        const port = ports.get(country);
        if (!port) throw new Error(`no upstream for ${country}`);
        return port;
      },
      usage: ctx.usage,
      metrics: ctx.metrics,
      logger: ctx.logger.child({ role: 'worker' }),
    },
    connection,
    ctx.redisPrefix,
  );
  ctx.resources.own('workers', running, (r) => r.close());
  return running;
}
