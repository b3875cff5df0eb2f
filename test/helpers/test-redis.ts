import { pino } from 'pino';
import { inject } from 'vitest';
import { createRedis, type Redis, type RedisTarget } from '../../src/db/redis.js';

/** The Redis the test run uses: the cluster under `npm run test:cluster`, else the single one. */
export function testRedisTarget(): RedisTarget {
  const cluster = inject('redisCluster');
  const url = inject('redisUrl');
  if (!cluster) return { url };
  return {
    url,
    cluster: cluster.split(',').map((n) => {
      const [host, port] = n.split(':');
      return { host: host!, port: Number(port) };
    }),
  };
}

/** A connection of a test's own (QueueEvents, a look at keys) that waits for Redis as BullMQ needs. */
export function connectTestRedis(name = 'test'): Redis {
  return createRedis(testRedisTarget(), 'blocking', pino({ level: 'silent' }), name);
}
