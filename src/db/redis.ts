import { createHash } from 'node:crypto';
import { Cluster, Redis as SingleRedis, type RedisOptions } from 'ioredis';
import type { Logger } from '../logger.js';
import { withTimeout } from './mongo.js';

/** A connection to one Redis or to a Redis Cluster: every part of the product takes either. */
export type Redis = SingleRedis | Cluster;

export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/**
 * Where Redis is: one server at `url`, or a cluster found through its seed nodes, where `url`
 * (REDIS_URL, when set) lends its user, password and TLS to every node.
 */
export interface RedisTarget {
  readonly url: string;
  readonly cluster?: readonly RedisNode[];
}

export type RedisRole =
  /** Commands issued while serving a request: fail at once when Redis is away, so the API can answer 503. */
  | 'command'
  /** BullMQ workers and blocking connections: wait for Redis forever, as BullMQ requires. */
  | 'blocking';

/** Reconnect for ever with a capped backoff: Redis restarts must heal without us. */
const reconnect = (times: number): number => Math.min(times * 200, 2_000);

/** The user, password and TLS of a URL, for a cluster's nodes. */
function credentialsOf(url: string): RedisOptions {
  const u = new URL(url);
  return {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

function connect(target: RedisTarget, role: RedisRole, name: string): Redis {
  const failFast = role === 'command';
  const options: RedisOptions = {
    connectionName: `shelfwatch:${name}`,
    ...(failFast ? { maxRetriesPerRequest: 1, connectTimeout: 5_000 } : { maxRetriesPerRequest: null }),
  };
  if (!target.cluster) {
    return new SingleRedis(target.url, { ...options, lazyConnect: false, retryStrategy: reconnect, enableOfflineQueue: !failFast });
  }
  return new Cluster(
    target.cluster.map((n) => ({ host: n.host, port: n.port })),
    {
      redisOptions: { ...options, ...credentialsOf(target.url) },
      clusterRetryStrategy: reconnect,
      enableOfflineQueue: !failFast,
      // A failover or a resharding answers MOVED, ASK, TRYAGAIN or CLUSTERDOWN for a moment:
      // commands wait and follow it instead of failing.
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 300,
      retryDelayOnTryAgain: 100,
      maxRedirections: 32,
    },
  );
}

export function createRedis(target: RedisTarget | string, role: RedisRole, logger: Logger, name: string): Redis {
  const redis = connect(typeof target === 'string' ? { url: target } : target, role, name);
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

/** What a process shows of where its Redis is, without credentials. */
export function describeTarget(target: RedisTarget): string {
  return target.cluster ? `the cluster of ${target.cluster.map((n) => `${n.host}:${n.port}`).join(',')}` : target.url;
}

/**
 * Another connection to the same Redis (a subscriber, say) with `options` on each node: a
 * cluster's `duplicate` takes them as its nodes' options, one Redis's as its own.
 */
export function duplicateRedis(
  redis: Redis,
  options: Pick<RedisOptions, 'connectionName' | 'enableOfflineQueue' | 'autoResubscribe'>,
): Redis {
  if (redis instanceof Cluster) {
    const { enableOfflineQueue, ...nodeOptions } = options;
    return redis.duplicate(undefined, {
      ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
      redisOptions: { ...redis.options.redisOptions, ...nodeOptions },
    });
  }
  return redis.duplicate(options);
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
  return /Stream isn't writeable|Connection is closed|enableOfflineQueue|ECONNREFUSED|CLUSTERDOWN|Failed to refresh slots cache|None of startup nodes is available/.test(
    err.message,
  );
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
