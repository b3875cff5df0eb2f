/**
 * Price history and alerts: how long points are kept, and how webhooks are delivered. Parsed by
 * loadConfig (env.ts); the per-account cap on alerts is in accounts.ts with the other caps, the
 * SMTP server of e-mail alerts in smtp.ts.
 */
import { z } from 'zod';
import { bool, duration, int, secureUrl } from './parsers.js';
import type { SmtpConfig } from './smtp.js';

/** One retry delay: at most a week, so a typo cannot park a delivery for a year. */
const retryDelay = duration.pipe(z.number().max(7 * 86_400_000, 'must be at most 7d'));

/**
 * A comma list of durations: the delay before each retry, in order. The first attempt is
 * immediate, so n delays make n + 1 attempts.
 */
const retrySchedule = z
  .string()
  .transform((v) => v.split(',').map((d) => d.trim()))
  .pipe(
    z
      .array(retryDelay, { error: 'must be a comma list of durations such as 5s,5m,30m' })
      .min(1, 'must list at least one delay')
      .max(30, 'must list at most 30 delays'),
  )
  .meta({ type: 'duration list' });

/** A comma list of TCP ports (1–65535), e.g. `443,8443`. */
const portList = z
  .string()
  .transform((v) => v.split(',').map((p) => p.trim()))
  .pipe(
    z
      .array(
        z
          .string()
          .regex(/^\d{1,5}$/)
          .transform(Number)
          .pipe(z.number().int().min(1).max(65_535)),
        {
          error: 'must be a comma list of ports such as 443,8443',
        },
      )
      .min(1, 'must list at least one port'),
  )
  .meta({ type: 'port list' });

export const alertsEnvSchema = z.object({
  HISTORY_DAYS: int(1, 36_500)
    .default(365)
    .meta({ description: 'Days a history point is kept (a TTL index enforces it; a change applies to points written after it).' }),
  ENDPOINT_ALLOW_PRIVATE: bool.default(false).meta({
    description:
      '`true` lets endpoint URLs resolve to private, loopback and link-local addresses, use http to loopback and name any port (local receivers, intranets, tests).',
  }),
  ENDPOINT_ALLOWED_PORTS: portList.default([443]).meta({
    description:
      'The ports webhook and chat URLs may name (a comma list), unless `ENDPOINT_ALLOW_PRIVATE`; another answers 422 at creation and fails at delivery.',
  }),
  DELIVERY_TIMEOUT: duration.default(10_000).meta({
    description: 'One delivery attempt on any channel, connection to the last byte read (at most 64 KiB of the answer is read).',
    defaultText: '10s',
  }),
  // Standard Webhooks' schedule: immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (~27 h).
  DELIVERY_RETRY_SCHEDULE: retrySchedule.default([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]).meta({
    description:
      "The delay before each retry, in order (a comma list of durations, each at most `7d`): the default makes Standard Webhooks' 8 attempts over about 27.6 h. A 429 from ntfy or Telegram waits longer when it asks to (Retry-After), by at most 1 h.",
    defaultText: '5s,5m,30m,2h,5h,10h,10h',
  }),
  TELEGRAM_API_URL: secureUrl
    .transform((v) => v.replace(/\/+$/, ''))
    .default('https://api.telegram.org')
    .meta({
      description:
        "The Bot API that `telegram` alerts post to (`<url>/bot<token>/sendMessage`): a Local Bot API Server, or a test receiver. Under the address guard like every endpoint's URL.",
    }),
  DELIVERY_CONCURRENCY: int(1, 1_000)
    .default(32)
    .meta({ description: 'Delivery attempts one worker process runs at once (each mostly waits on a receiver).' }),
  ENDPOINT_DISABLE_AFTER: duration.default(5 * 86_400_000).meta({
    description:
      'An endpoint whose deliveries have all failed for longer than this is disabled at its next failure, with an `endpoint.disabled` event.',
    defaultText: '5d',
  }),
  DELIVERY_RECORDS_PER_ENDPOINT: int(10, 1_000_000)
    .default(1_000)
    .meta({ description: 'Delivery records kept per endpoint (the oldest beyond it are deleted; records also expire after 30 days).' }),
  // E-mails (alerts, tests, confirmations) one account may send a UTC day, and to one of its addresses; 0: no cap.
  EMAIL_MAX_PER_ACCOUNT_PER_DAY: int(0, 1_000_000).default(200).meta({
    description: 'E-mails one account may send a UTC day (alert attempts, tests, confirmations; counted in Redis); `0` turns it off.',
  }),
  EMAIL_MAX_PER_ADDRESS_PER_DAY: int(0, 1_000_000)
    .default(50)
    .meta({ description: 'E-mails one account may send one address a UTC day; `0` turns it off.' }),
  // Permanent refusals (5xx to RCPT or DATA) in a row after which an address is bounced.
  EMAIL_BOUNCE_LIMIT: int(1, 100).default(3).meta({
    description: 'Permanent refusals (a 5xx reply to RCPT TO or DATA) in a row after which an address is `bounced` for that account.',
  }),
  // How long a confirmation link works.
  EMAIL_CONFIRM_TTL: duration
    .pipe(z.number().max(30 * 86_400_000, 'must be at most 30d'))
    .default(7 * 86_400_000)
    .meta({ description: 'How long a confirmation link works (at most `30d`).', defaultText: '7d' }),
  ALERT_TESTS_PER_HOUR: int(0, 1_000_000).default(5).meta({
    description:
      'Test sends (`POST /api/alerts/{id}/test`) to one endpoint an hour, counted in Redis (one more answers 429); `0` turns it off.',
  }),
  ALERT_TESTS_PER_DAY: int(0, 1_000_000)
    .default(100)
    .meta({ description: 'Test sends of one account a day, counted in Redis (one more answers 429); `0` turns it off.' }),
  ALERT_TESTS_IN_FLIGHT: int(1, 10_000)
    .default(16)
    .meta({ description: 'Test sends one api process makes at once (one more answers 503 and counts nothing).' }),
});

/** What a delivery reads of a receiver's answer at most: it only needs the status. */
export const DELIVERY_MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * The longest wait a receiver's Retry-After (or Telegram's `retry_after`) can add before a retry:
 * beyond it the schedule's own delay holds, so a receiver cannot park a delivery for days.
 */
export const DELIVERY_MAX_RETRY_AFTER_MS = 3_600_000;

/** How long creating an alert, or connecting to a webhook, waits for the DNS answer about its host. */
export const ENDPOINT_LOOKUP_TIMEOUT_MS = 5_000;

/**
 * The resolver's own deadline: the first try waits this long and c-ares lengthens the next (two
 * tries take about 3 s against a server that never answers); ENDPOINT_LOOKUP_TIMEOUT_MS cancels
 * the lookup in any case.
 */
export const DNS_TRY_TIMEOUT_MS = 1_000;
export const DNS_TRIES = 2;

/**
 * DNS lookups of one account's host names in flight in one process: more wait for a place (until
 * ENDPOINT_LOOKUP_TIMEOUT_MS), so one account's slow names cannot hold the resolver for the others.
 */
export const DNS_LOOKUPS_PER_ACCOUNT = 4;

/** What the test button may send: to one target an hour, for one account a day, and at once in one process. */
export interface AlertTestLimits {
  /** Test sends to one endpoint an hour (0: no limit). */
  readonly perTargetPerHour: number;
  /** Test sends of one account a day (0: no limit). */
  readonly perAccountPerDay: number;
  /** Test sends one process makes at once. */
  readonly inFlight: number;
}

/**
 * How long one MongoDB call of a delivery may take: a read's maxTimeMS, a write's deadline. Past
 * it the attempt fails and is retried, rather than holding a worker slot while MongoDB stalls.
 */
export const DELIVERY_DB_TIMEOUT_MS = 5_000;

export interface AlertsConfig {
  /** Days a history point is kept (a TTL on each point's expiry). */
  readonly historyDays: number;
  /** Webhooks may go to private, loopback and link-local addresses, and http to loopback (and to any port). */
  readonly allowPrivate: boolean;
  /** The ports URL targets may name unless `allowPrivate`. */
  readonly allowedPorts: readonly number[];
  /** One delivery attempt, connect to last byte read. */
  readonly timeoutMs: number;
  /** The delay before each retry (ms), in order. */
  readonly retryScheduleMs: readonly number[];
  /** Attempts in all: the first, and one after each delay of the schedule. */
  readonly attempts: number;
  /** Delivery attempts one process runs at once. */
  readonly concurrency: number;
  /** An endpoint failing for longer than this (no success since) is disabled at its next failure. */
  readonly disableAfterMs: number;
  /** Delivery records kept per endpoint; the oldest beyond it are deleted. */
  readonly recordsPerEndpoint: number;
  /** The Bot API base of `telegram` alerts, without a trailing slash. */
  readonly telegramApiUrl: string;
  /** Where e-mail alerts are sent through (config/smtp.ts); null: e-mail alerts are refused. */
  readonly smtp: SmtpConfig | null;
  /** What an account may mail (src/alerts/endpoints/email-addresses.ts). */
  readonly email: EmailLimits;
  readonly tests: AlertTestLimits;
}

export interface EmailLimits {
  /** Mails an account sends a UTC day, every kind counted; 0: no cap. */
  readonly perAccountPerDay: number;
  /** Mails an account sends one address a UTC day; 0: no cap. */
  readonly perAddressPerDay: number;
  /** Permanent refusals in a row that make an address `bounced`. */
  readonly bounceLimit: number;
  /** How long a confirmation link works. */
  readonly confirmTtlMs: number;
}

export function buildAlertsConfig(env: z.infer<typeof alertsEnvSchema>, smtp: SmtpConfig | null = null): AlertsConfig {
  return Object.freeze({
    historyDays: env.HISTORY_DAYS,
    allowPrivate: env.ENDPOINT_ALLOW_PRIVATE,
    allowedPorts: Object.freeze([...new Set(env.ENDPOINT_ALLOWED_PORTS)]),
    timeoutMs: env.DELIVERY_TIMEOUT,
    retryScheduleMs: Object.freeze([...env.DELIVERY_RETRY_SCHEDULE]),
    attempts: env.DELIVERY_RETRY_SCHEDULE.length + 1,
    concurrency: env.DELIVERY_CONCURRENCY,
    disableAfterMs: env.ENDPOINT_DISABLE_AFTER,
    recordsPerEndpoint: env.DELIVERY_RECORDS_PER_ENDPOINT,
    telegramApiUrl: env.TELEGRAM_API_URL,
    smtp,
    email: Object.freeze({
      perAccountPerDay: env.EMAIL_MAX_PER_ACCOUNT_PER_DAY,
      perAddressPerDay: env.EMAIL_MAX_PER_ADDRESS_PER_DAY,
      bounceLimit: env.EMAIL_BOUNCE_LIMIT,
      confirmTtlMs: env.EMAIL_CONFIRM_TTL,
    }),
    tests: Object.freeze({
      perTargetPerHour: env.ALERT_TESTS_PER_HOUR,
      perAccountPerDay: env.ALERT_TESTS_PER_DAY,
      inFlight: env.ALERT_TESTS_IN_FLIGHT,
    }),
  });
}
