/**
 * Counters of fixed windows in Redis, taken together: the limits that several processes share (test
 * sends, chart renders, e-mails a day). A window starts with its first count and lasts its length;
 * its key carries whatever else names it (an account, a target, a day). Keys taken together must
 * share a hash tag, so one script touches them on a Redis Cluster too.
 */
import { evalScript, type Redis } from './redis.js';

/**
 * KEYS: the counters; ARGV: each one's limit and window (ms), in pairs. Either every counter is
 * under its limit and each takes one, or none moves and the answer names the first one full (from
 * 1) and the ms left in its window, so a refused count spends nothing.
 */
const TAKE = `
for i, key in ipairs(KEYS) do
  local n = tonumber(redis.call('GET', key) or '0')
  if n >= tonumber(ARGV[2 * i - 1]) then
    local ttl = redis.call('PTTL', key)
    if ttl < 0 then
      redis.call('PEXPIRE', key, ARGV[2 * i])
      ttl = tonumber(ARGV[2 * i])
    end
    return {i, ttl}
  end
end
for i, key in ipairs(KEYS) do
  if redis.call('INCR', key) == 1 then redis.call('PEXPIRE', key, ARGV[2 * i]) end
end
return {0, 0}
`;

/** Gives back what TAKE took, only while a window lasts: a counter that expired meanwhile stays gone. */
const GIVE_BACK = `
for _, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') > 0 then redis.call('DECR', key) end
end
return 0
`;

export interface CounterWindow {
  readonly key: string;
  /** Counts the window allows; a window of limit 0 is left out by the caller (no cap). */
  readonly limit: number;
  readonly ms: number;
}

/** Taken, or which window is full (its index in the list given) and how long until it ends. */
export type WindowTake = { readonly ok: true } | { readonly ok: false; readonly full: number; readonly retryAfterMs: number };

/** One count in every window, or none. */
export async function takeFromWindows(redis: Redis, windows: readonly CounterWindow[]): Promise<WindowTake> {
  if (windows.length === 0) return { ok: true };
  const [full, ttl] = (await evalScript(
    redis,
    TAKE,
    windows.length,
    ...windows.map((w) => w.key),
    ...windows.flatMap((w) => [w.limit, w.ms]),
  )) as [number, number];
  return full === 0 ? { ok: true } : { ok: false, full: full - 1, retryAfterMs: ttl };
}

/** Gives back one count of each key (what was taken for something that then did not happen). */
export async function giveBackToWindows(redis: Redis, keys: readonly string[]): Promise<void> {
  if (keys.length > 0) await evalScript(redis, GIVE_BACK, keys.length, ...keys);
}
