import { createHash } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../logger.js';
import { withTimeout } from './mongo.js';

export type { Redis };

export type RedisRole =
  /** Commands issued while serving a request: fail at once when Redis is away, so the API can answer 503. */
  | 'command'
  /** BullMQ workers and blocking connections: wait for Redis forever, as BullMQ requires. */
  | 'blocking';

export function createRedis(url: string, role: RedisRole, logger: Logger, name: string): Redis {
  const options: RedisOptions = {
    connectionName: `shelfwatch:${name}`,
    lazyConnect: false,
    // Reconnect for ever with a capped backoff: Redis restarts must heal without us.
    retryStrategy: (times) => Math.min(times * 200, 2_000),
    ...(role === 'command'
      ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 5_000 }
      : { maxRetriesPerRequest: null, enableOfflineQueue: true }),
  };
  const redis = new Redis(url, options);
  let down = false;
  redis.on('error', (err: Error) => {
    if (!down) logger.warn({ err: { message: err.message }, redis: name }, 'redis connection error');
    down = true;
  });
  redis.on('ready', () => {
    if (down) logger.info({ redis: name }, 'redis connection restored');
    down = false;
  });
  return redis;
}

/** Waits for the first `ready`, or fails with the connection's error after `timeoutMs`. */
export async function redisReady(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  await withTimeout(new Promise<void>((resolve) => redis.once('ready', () => resolve())), timeoutMs, 'Redis connection');
}

export async function pingRedis(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status !== 'ready') throw new Error(`not connected (${redis.status})`);
  await withTimeout(redis.ping(), timeoutMs, 'Redis ping');
}

export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await withTimeout(redis.quit(), 2_000, 'Redis quit');
  } catch {
    redis.disconnect();
  }
}

/**
 * Whether `err` is the fail-fast client refusing a command because Redis is away. ioredis raises
 * these as plain Errors (only MaxRetriesPerRequestError has a class of its own, and it is not
 * exported), so this is the one place that reads their names and messages.
 */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  return /Stream isn't writeable|Connection is closed|enableOfflineQueue|ECONNREFUSED/.test(err.message);
}

const shas = new Map<string, string>();

/**
 * Runs a Lua script by its SHA1 (EVALSHA), sending its text (EVAL) only when Redis does not have it
 * yet: what ioredis's defineCommand does, without a name on the shared connection per script. The
 * hot scripts (the governor's, once or twice a call) are several kB each.
 */
export async function evalScript(redis: Redis, lua: string, numKeys: number, ...args: (string | number)[]): Promise<unknown> {
  let sha = shas.get(lua);
  if (!sha) shas.set(lua, (sha = createHash('sha1').update(lua).digest('hex')));
  try {
    return await redis.evalsha(sha, numKeys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return redis.eval(lua, numKeys, ...args);
  }
}
