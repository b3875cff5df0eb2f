/**
 * The daily caps on e-mail: mails one account sends a UTC day (EMAIL_MAX_PER_ACCOUNT_PER_DAY), and
 * mails it sends one address (EMAIL_MAX_PER_ADDRESS_PER_DAY), every kind counted (alerts and each
 * of their attempts, tests, confirmations), counted in Redis so every process shares them. Both
 * keys carry the accounts' hash tag, so one script takes both at once on a Redis Cluster too.
 */
import { createHash } from 'node:crypto';
import { evalScript, type Redis } from '../db/redis.js';
import { sharedTag } from '../db/redis-keys.js';
import type { EmailLimits } from '../../config/alerts.js';

/** A day's counters outlive it by one, as the other daily counters do (src/accounts/limits.ts). */
const COUNTER_TTL_S = 2 * 86_400;

/**
 * Counts one mail on both keys; when either is then over its limit (0: none), gives both back in
 * the same script, so a refused mail spends nothing and no concurrent one sees its count.
 * KEYS: 1 the account's, 2 the address's. ARGV: 1 account limit, 2 address limit, 3 TTL s.
 * Answers 1 (taken), 0 (the account's cap) or 2 (the address's).
 */
const TAKE_SCRIPT = `
local a = redis.call('INCR', KEYS[1])
local b = redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[3])
local la, lb = tonumber(ARGV[1]), tonumber(ARGV[2])
local over = 1
if la > 0 and a > la then over = 0 elseif lb > 0 and b > lb then over = 2 end
if over ~= 1 then
  redis.call('DECR', KEYS[1])
  redis.call('DECR', KEYS[2])
end
return over
`;

export type CapTake = { ok: true } | { ok: false; cap: 'account' | 'address'; limit: number; retryAfterSeconds: number };

/** The UTC day of `at`, as the keys name it. */
export function mailDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** Seconds from `at` to the next UTC midnight, when the counts start again. */
export function secondsToNextDay(at: number): number {
  const next = Date.UTC(new Date(at).getUTCFullYear(), new Date(at).getUTCMonth(), new Date(at).getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - at) / 1_000));
}

export function accountMailKey(prefix: string, userId: string, day: string): string {
  return `${sharedTag(prefix, 'accounts')}:${userId}:mails:${day}`;
}

/** The address hashed: keys need not spell it out. */
export function addressMailKey(prefix: string, userId: string, address: string, day: string): string {
  const hash = createHash('sha256').update(address).digest('hex').slice(0, 32);
  return `${sharedTag(prefix, 'accounts')}:${userId}:mails-to:${hash}:${day}`;
}

export class EmailCaps {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limits: Pick<EmailLimits, 'perAccountPerDay' | 'perAddressPerDay'>,
  ) {}

  /** Takes one mail of the account's day to `address`, or says which cap is spent and until when. */
  async take(userId: string, address: string, now = Date.now()): Promise<CapTake> {
    const { perAccountPerDay: a, perAddressPerDay: b } = this.limits;
    if (a === 0 && b === 0) return { ok: true };
    const day = mailDay(now);
    const keys = [accountMailKey(this.prefix, userId, day), addressMailKey(this.prefix, userId, address, day)];
    const got = Number(await evalScript(this.redis, TAKE_SCRIPT, 2, ...keys, a, b, COUNTER_TTL_S));
    if (got === 1) return { ok: true };
    const cap = got === 0 ? 'account' : 'address';
    return { ok: false, cap, limit: cap === 'account' ? a : b, retryAfterSeconds: secondsToNextDay(now) };
  }
}
