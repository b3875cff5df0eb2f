import type { Logger } from '../logger.js';
import { closeRedis, createRedis, type Redis, type RedisTarget } from '../db/redis.js';
import { channelName } from '../db/redis-keys.js';

const channel = (prefix: string): string => channelName(prefix, 'plan-nudge');

/**
 * Tells the schedulers that products have just become due (a new watch), so that one plans at once
 * instead of at its next tick. Best effort: a lost nudge costs one tick's delay, never work.
 */
export async function nudgePlanner(redis: Redis, prefix: string): Promise<void> {
  await redis.publish(channel(prefix), '1').catch(() => undefined);
}

/** Calls `onNudge` (at most once per `debounceMs`) whenever a nudge arrives. Returns the closer. */
export async function onPlanNudge(
  redisTarget: RedisTarget,
  prefix: string,
  logger: Logger,
  onNudge: () => void,
  debounceMs = 250,
): Promise<() => Promise<void>> {
  const sub = createRedis(redisTarget, 'blocking', logger, 'plan-nudges');
  let timer: NodeJS.Timeout | undefined;
  sub.on('message', () => {
    timer ??= setTimeout(() => {
      timer = undefined;
      onNudge();
    }, debounceMs);
  });
  await sub.subscribe(channel(prefix));
  return async () => {
    if (timer) clearTimeout(timer);
    await closeRedis(sub);
  };
}
