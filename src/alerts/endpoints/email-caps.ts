/**
 * The daily caps on e-mail: mails one account sends a UTC day (EMAIL_MAX_PER_ACCOUNT_PER_DAY), and
 * mails it sends one address (EMAIL_MAX_PER_ADDRESS_PER_DAY), every kind counted (alerts and each
 * of their attempts, tests, confirmations), counted in Redis so every process shares them. Both
 * keys carry the accounts' hash tag, so one script takes both at once on a Redis Cluster too.
 */
import { createHash } from 'node:crypto';
import type { Redis } from '../../db/redis.js';
import { takeFromWindows } from '../../db/window-counters.js';
import { sharedTag } from '../../db/redis-keys.js';
import type { EmailLimits } from '../../../config/alerts.js';

/** A day's counters outlive it by one, as the other daily counters do (src/accounts/limits.ts). */
const COUNTER_TTL_MS = 2 * 86_400_000;

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
    // The keys name the day, so a window outliving it never counts into the next one.
    const windows = [
      { cap: 'account' as const, limit: a, key: accountMailKey(this.prefix, userId, day) },
      { cap: 'address' as const, limit: b, key: addressMailKey(this.prefix, userId, address, day) },
    ].filter((w) => w.limit > 0);
    const taken = await takeFromWindows(
      this.redis,
      windows.map((w) => ({ ...w, ms: COUNTER_TTL_MS })),
    );
    if (taken.ok) return { ok: true };
    const { cap, limit } = windows[taken.full]!;
    return { ok: false, cap, limit, retryAfterSeconds: secondsToNextDay(now) };
  }
}
