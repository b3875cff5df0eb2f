/**
 * Price history and alerts: how long points are kept, and how webhooks are delivered. Parsed by
 * loadConfig (env.ts); the per-account cap on alerts is in accounts.ts with the other caps.
 */
import { z } from 'zod';
import { bool, duration, int } from './parsers.js';

export const alertsEnvSchema = z.object({
  HISTORY_DAYS: int(1, 36_500).default(365),
  WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  WEBHOOK_TIMEOUT: duration.default(10_000),
  WEBHOOK_RETRY_BASE: duration.pipe(z.number().max(3_600_000, 'must be at most 1h')).default(20_000),
});

/** What a delivery reads of a receiver's answer at most: it only needs the status. */
export const WEBHOOK_MAX_RESPONSE_BYTES = 64 * 1024;
/** How long a change may take to be delivered before its retries stop. */
export const DELIVERY_SPAN_MS = 86_400_000;

export interface AlertsConfig {
  /** Days a history point is kept (a TTL on each point's expiry). */
  readonly historyDays: number;
  /** Webhooks may go to private, loopback and link-local addresses, and http to loopback. */
  readonly allowPrivate: boolean;
  /** One delivery attempt, connect to last byte read. */
  readonly timeoutMs: number;
  /** The first retry's delay; each next one doubles it. */
  readonly retryBaseMs: number;
  /** Attempts in all: as many as the doubling delays fit in DELIVERY_SPAN_MS. */
  readonly attempts: number;
}

/**
 * BullMQ's exponential backoff waits base·2^(k-1) before retry k, so n attempts span
 * base·(2^(n-1) - 1): the most attempts whose span is still within the day.
 */
export function deliveryAttempts(baseMs: number, spanMs = DELIVERY_SPAN_MS): number {
  let n = 1;
  while (baseMs * (2 ** n - 1) <= spanMs) n++;
  return n;
}

export function buildAlertsConfig(env: z.infer<typeof alertsEnvSchema>): AlertsConfig {
  return Object.freeze({
    historyDays: env.HISTORY_DAYS,
    allowPrivate: env.WEBHOOK_ALLOW_PRIVATE,
    timeoutMs: env.WEBHOOK_TIMEOUT,
    retryBaseMs: env.WEBHOOK_RETRY_BASE,
    attempts: deliveryAttempts(env.WEBHOOK_RETRY_BASE),
  });
}
