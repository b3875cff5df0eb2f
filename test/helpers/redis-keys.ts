import { Cluster, type Redis as SingleRedis } from 'ioredis';
import type { Redis } from '../../src/db/redis.js';
import { keyPattern } from '../../src/db/redis-keys.js';

/** Every key of a prefix; on a cluster, from every master (KEYS answers for one node only). */
export async function keysOf(redis: Redis | SingleRedis, prefix: string): Promise<string[]> {
  const pattern = keyPattern(prefix);
  if (redis instanceof Cluster) return (await Promise.all(redis.nodes('master').map((n) => n.keys(pattern)))).flat();
  return redis.keys(pattern);
}

/** Deletes every key of a prefix, one DEL per key on a cluster (the keys live in many slots). */
export async function dropKeys(redis: Redis | SingleRedis, prefix: string): Promise<void> {
  const keys = await keysOf(redis, prefix);
  if (!keys.length) return;
  if (redis instanceof Cluster) await Promise.all(keys.map((k) => redis.del(k)));
  else await redis.del(...keys);
}
