import { pino, type Logger } from 'pino';
import type { Config } from '../config/env.js';

export type { Logger };

/**
 * Paths that may hold a secret anywhere we log. pino's redaction is path-based, so the wildcards
 * cover one level of nesting (a `user.token`, a job's `data.token`); request URLs are cleaned
 * separately (see http/request-log.ts) because a query string is not a path.
 */
export const REDACT_PATHS = [
  'token',
  'apiToken',
  'api_token',
  'password',
  'secret',
  'appKey',
  '*.token',
  '*.apiToken',
  '*.api_token',
  '*.password',
  '*.secret',
  '*.tokenHash',
  '*.tokenCipher',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.body.api_token',
  // A chat target's credentials, should a body or its fields ever be logged.
  'ntfy_token',
  'telegram_bot_token',
  '*.ntfy_token',
  '*.telegram_bot_token',
  'req.query.api_token',
  // The deals feed's token travels in its URL (feed readers send no headers).
  'feed_token',
  '*.feed_token',
  'req.query.feed_token',
  'res.headers["set-cookie"]',
];

export function createLogger(config: Pick<Config, 'log'>, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level: config.log.level,
    base: { service: 'shelfwatch' },
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
  };
  if (destination) return pino(options, destination as unknown as pino.DestinationStream);
  if (config.log.pretty) return pino({ ...options, transport: { target: 'pino-pretty', options: { destination: 2 } } });
  // Logs go to stderr so that admin commands can keep stdout for their one line of JSON.
  return pino(options, pino.destination({ fd: 2, sync: false }));
}

/** One warning per setting still given under a former name (configuration itself does not log). */
export function warnDeprecatedSettings(logger: Logger, config: Pick<Config, 'deprecations'>): void {
  for (const d of config.deprecations) logger.warn({ setting: d.name, replacement: d.replacement }, d.message);
}
