import type { RequestHandler } from 'express';
import { evalScript } from '../../db/redis.js';
import type { AppContext } from '../context.js';
import { ServiceUnavailableError, TooManyRequestsError, UnauthenticatedError } from '../../core/errors.js';
import { clientIpKey } from './rate-limit.js';
import { sharedTag } from '../../db/redis-keys.js';

/**
 * Failed authentications per client address (RATE_LIMIT_AUTH_FAILURES a minute), counted in Redis
 * so that every api process shares the count, whichever credential was tried (an account API token,
 * Bull Board's password). Only failures count: a client sending many good requests at once (a
 * busy integration, an office behind one address) is never refused for it. Past the limit the
 * address is refused before its credential is looked at, a good one too: a 200 among the 429s
 * would tell which guess was right. Guesses already in flight when the limit is reached still get
 * their answer, so a window admits at most the limit plus one burst of concurrent guesses.
 */

const WINDOW_MS = 60_000;

/** One more failure in the window, which starts with the first. */
const FAILED = `
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`;

/** The failures counted in the window, and how long it still runs (ms). */
const READ = `return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1])}`;

export interface AuthFailureGuard {
  /** `check` (a credential check that calls `next()` only when it passes) behind the address's gate. */
  around(check: RequestHandler): RequestHandler[];
}

export function authFailureGuard(ctx: Pick<AppContext, 'config' | 'redis' | 'redisPrefix' | 'logger'>): AuthFailureGuard {
  const limit = ctx.config.rateLimits.authFailuresPerMinute;
  if (limit === 0) return { around: (check) => [check] };
  const logger = ctx.logger.child({ limiter: 'auth-failures' });
  const keyOf = (ip: string): string => `${sharedTag(ctx.redisPrefix, 'auth')}:${ip}`;

  const gate: RequestHandler = (req, _res, next) => {
    (evalScript(ctx.redis, READ, 1, keyOf(clientIpKey(req))) as Promise<[number, number]>).then(
      ([failures, leftMs]) =>
        next(failures < limit ? undefined : new TooManyRequestsError('Too Many Attempts.', Math.max(leftMs, 1_000) / 1_000)),
      (err: unknown) => {
        // Fail closed, as the other limiters do: without the count, guesses would be unmetered.
        logger.warn({ err }, 'authentication failure count unavailable; refusing the request');
        next(new ServiceUnavailableError());
      },
    );
  };
  const failed = (req: Parameters<RequestHandler>[0]): void => {
    (evalScript(ctx.redis, FAILED, 1, keyOf(clientIpKey(req)), WINDOW_MS) as Promise<unknown>).catch((err: unknown) =>
      logger.warn({ err }, 'could not count a failed authentication'),
    );
  };
  // A check either passes (next() with no error), fails through next(err), or answers by itself.
  const counted =
    (check: RequestHandler): RequestHandler =>
    (req, res, next) => {
      let settled = false;
      res.once('finish', () => {
        if (!settled && res.statusCode === 401) failed(req);
      });
      void check(req, res, (err?: unknown) => {
        settled = true;
        if (err instanceof UnauthenticatedError) failed(req);
        next(err);
      });
    };
  return { around: (check) => [gate, counted(check)] };
}
