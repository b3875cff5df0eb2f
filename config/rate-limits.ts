/**
 * Requests a minute (token rotations an hour) the HTTP side accepts per client, each counted in Redis so that every api
 * process shares one count (readyz's in each process). 0 turns a limit off. Parsed by loadConfig.
 */
import { z } from 'zod';
import { int } from './parsers.js';

const perMinute = int(0, 1_000_000);

export const rateLimitsEnvSchema = z.object({
  RATE_LIMIT_API: perMinute
    .default(600)
    .meta({ description: "The account API's requests a minute per account, counted in Redis; `0` turns it off." }),
  RATE_LIMIT_UPDATE: perMinute
    .default(60)
    .meta({ description: 'Forced updates a minute per account, on top of `RATE_LIMIT_API`; `0` turns it off.' }),
  RATE_LIMIT_AUTH_FAILURES: perMinute.default(30).meta({
    description:
      'Failed authentications a minute per client address (tokens, Bull Board passwords); past it that address gets 429 on those routes until the minute ends, `0` turns it off.',
  }),
  RATE_LIMIT_READYZ: perMinute.default(600).meta({
    description:
      '`/readyz` requests a minute per client address, counted in each process so it answers while Redis is away; `0` turns it off.',
  }),
  DIRECTORY_RATE_LIMIT: perMinute.default(60).meta({
    description:
      "The public directory's requests a minute per client on `/api/user` and `/api/post` together, counted in Redis; `0` turns it off.",
  }),
  RATE_LIMIT_TOKEN_ROTATION: int(0, 1_000_000).default(10).meta({
    description:
      "Token rotations (`POST /api/me/token`) an hour per account, since each one drops the account from every api process's cache; `0` turns it off.",
  }),
});

export interface RateLimitsConfig {
  /** The account API's requests a minute per account. */
  readonly apiPerMinute: number;
  /** Forced updates a minute per account. */
  readonly updatePerMinute: number;
  /** Failed authentications a minute per client address (account API, Bull Board). */
  readonly authFailuresPerMinute: number;
  /** /readyz requests a minute per client address, counted in each process. */
  readonly readyzPerMinute: number;
  /** The public directory's requests a minute per client address, both lists together. */
  readonly directoryPerMinute: number;
  /**
   * Token rotations an hour per account: each one drops that account from every api process's
   * account cache, so a loop of them would keep every process reading it again.
   */
  readonly tokenRotationsPerHour: number;
}

export function buildRateLimitsConfig(env: z.infer<typeof rateLimitsEnvSchema>): RateLimitsConfig {
  return Object.freeze({
    apiPerMinute: env.RATE_LIMIT_API,
    updatePerMinute: env.RATE_LIMIT_UPDATE,
    authFailuresPerMinute: env.RATE_LIMIT_AUTH_FAILURES,
    readyzPerMinute: env.RATE_LIMIT_READYZ,
    directoryPerMinute: env.DIRECTORY_RATE_LIMIT,
    tokenRotationsPerHour: env.RATE_LIMIT_TOKEN_ROTATION,
  });
}
