import { randomUUID } from 'node:crypto';
import { evalScript } from '../db/redis.js';
import type { Redis } from '../db/redis.js';

// Delete or extend the key only if it still holds our token: a lock that expired and was taken by
// another scheduler must not be released or kept by us.
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;

/**
 * A Redis lock (SET NX PX) so that two schedulers, or a tick that overlaps the previous one, never
 * plan at the same time. It expires by itself if its holder dies, and is renewed every third of its
 * TTL while `fn` runs, so a pass slower than the TTL (a slow MongoDB) keeps it.
 */
export async function withLock<T>(
  redis: Redis,
  key: string,
  ttlMs: number,
  fn: () => Promise<T>,
): Promise<{ ran: true; value: T } | { ran: false }> {
  const token = randomUUID();
  const ok = await redis.set(key, token, 'PX', ttlMs, 'NX');
  if (ok !== 'OK') return { ran: false };
  const renew = setInterval(
    () => void evalScript(redis, RENEW, 1, key, token, String(ttlMs)).catch(() => undefined),
    Math.max(100, Math.floor(ttlMs / 3)),
  );
  try {
    return { ran: true, value: await fn() };
  } finally {
    clearInterval(renew);
    await evalScript(redis, RELEASE, 1, key, token).catch(() => undefined);
  }
}
