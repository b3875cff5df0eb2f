import type { AppContext } from '../context.js';
import { startScheduler, type RunningScheduler } from '../../scheduling/ticks.js';
import { onPlanNudge } from '../../scheduling/nudge.js';
import { requeueStalledImports } from '../../watch/ean-imports.js';
import { startDigestTick } from './digest-tick.js';

/**
 * The scheduler role: plans refreshes and crawls on node-cron ticks, and at once when the api says
 * a watch made products due; safe to run more than once. The slow tick also puts back EAN resolve
 * jobs that Redis may have lost. Each minute it sends the digests whose window has closed.
 */
export async function startSchedulerRole(ctx: AppContext): Promise<RunningScheduler> {
  const running = startScheduler(ctx, ctx.logger.child({ role: 'scheduler' }), [() => requeueStalledImports(ctx)]);
  ctx.resources.own('scheduler', running, (s) => s.close());
  ctx.resources.own('digest tick', startDigestTick(ctx), (d) => d.close());
  const stop = await onPlanNudge(ctx.redisTarget, ctx.redisPrefix, ctx.logger, () => {
    running
      .planNow()
      .catch((err: Error) => ctx.logger.warn({ err: { message: err.message } }, 'nudged plan failed; the next tick tries again'));
  });
  ctx.resources.own('plan nudges', stop, (s) => s());
  return running;
}
