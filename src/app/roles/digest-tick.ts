import cron, { type ScheduledTask } from 'node-cron';
import type { AppContext } from '../context.js';
import { withLock } from '../../scheduling/lock.js';
import { sharedTag } from '../../db/redis-keys.js';
import { once } from '../../lifecycle/once.js';

/** Every minute, at its start: an hour's or a day's window closes on a minute. */
export const DIGEST_CRON = '* * * * *';

export interface RunningDigestTick {
  /** One pass now (also what each tick runs); undefined when another scheduler holds the lock. */
  flushNow(): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * The scheduler's digest tick: sends the digests whose window has closed (ctx.digests). Under the
 * Redis lock `lock:digests`, so with several schedulers one flushes at a time; a digest's job id
 * is its endpoint and window as a second guard. A failed pass is logged and the next minute's
 * tries again: held deliveries stay until their digest is queued.
 */
export function startDigestTick(ctx: Pick<AppContext, 'redis' | 'redisPrefix' | 'digests' | 'logger'>): RunningDigestTick {
  const inFlight = new Set<Promise<unknown>>();
  const tasks: ScheduledTask[] = [];
  const close = once(async () => {
    await Promise.all(tasks.map((t) => t.stop()));
    await Promise.all(tasks.map((t) => t.destroy()));
    await Promise.allSettled(inFlight);
  });
  const flushNow = async (): Promise<number | undefined> => {
    if (close.started) return undefined;
    const run = withLock(ctx.redis, `${sharedTag(ctx.redisPrefix, 'locks')}:digests`, 30_000, () => ctx.digests.flush());
    inFlight.add(run);
    try {
      const res = await run;
      if (res.ran && res.value > 0) ctx.logger.info({ digests: res.value }, 'digests queued');
      return res.ran ? res.value : undefined;
    } finally {
      inFlight.delete(run);
    }
  };
  const tick = (): Promise<void> =>
    flushNow().then(
      () => undefined,
      (err: Error) =>
        ctx.logger.warn(
          { tick: 'digests', err: { name: err.name, message: err.message } },
          'digest tick failed; the next tick tries again',
        ),
    );
  tasks.push(cron.schedule(DIGEST_CRON, tick, { name: 'send-digests', noOverlap: true }));
  // At start too: a scheduler that was down sends what came due meanwhile.
  void tick();
  return { flushNow, close };
}
