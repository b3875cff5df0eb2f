import type { Request, RequestHandler } from 'express';
import { rateLimit, ipKeyGenerator, type Store } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import { Cluster } from 'ioredis';
import type { Redis } from '../../db/redis.js';
import type { AppContext } from '../context.js';
import { HttpError, ServiceUnavailableError } from '../../core/errors.js';
import { sharedTag } from '../../db/redis-keys.js';

/**
 * Rate limiters counted in Redis, so that every api process behind a load balancer shares one
 * count per client. Headers follow Laravel's throttle middleware for the clients
 * written against it: `X-RateLimit-Limit` and `-Remaining` on every answer, and on a 429 also
 * `Retry-After`, `X-RateLimit-Reset` and `{"message":"Too Many Attempts."}`. The IETF draft headers
 * (`RateLimit`, `RateLimit-Policy`, draft 8) are sent beside them for clients that read the standard.
 */

export interface LimiterOptions {
  /** Names the counter in Redis (`<prefix>:rl:<name>:<key>`) and in the RateLimit header. */
  readonly name: string;
  /** Requests per window; 0 turns the limiter off. */
  readonly limit: number;
  readonly windowMs?: number;
  /** Who is counted. Default: the client address (IPv6 by /56, as express-rate-limit advises). */
  readonly key?: (req: Request) => string;
  /**
   * Count in this process's memory instead of Redis: for what costs this process alone and must be
   * answered while Redis is away (/readyz reports that very absence).
   */
  readonly perProcess?: boolean;
}

/** The client address as Express resolved it under TRUST_PROXY. */
export function clientIpKey(req: Request): string {
  // req.ip is undefined only when the socket is already gone; such a request is answered by nobody.
  return ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}

/**
 * A script load that failed while Redis was away stays a rejected promise inside RedisStore, and
 * every later increment would fail on it even after Redis is back. So a failed increment loads the
 * script again and retries once: with Redis still away that fails fast too (the command connection
 * has no offline queue); with Redis back the limiter heals on the spot.
 */
class HealingRedisStore extends RedisStore {
  override async increment(key: string) {
    try {
      return await super.increment(key);
    } catch {
      this.incrementScriptSha = this.loadIncrementScript();
      return super.increment(key);
    }
  }
}

type StoreReply = number | string | (number | string)[];

/**
 * The store's commands. It loads its scripts with SCRIPT LOAD, which names no key, and runs them
 * with EVALSHA on its key's node: on a cluster every master is told the script (a master promoted
 * later answers NOSCRIPT once, and the store loads it again).
 */
async function sendStoreCommand(redis: Redis, command: string, args: string[]): Promise<StoreReply> {
  if (redis instanceof Cluster && command.toUpperCase() === 'SCRIPT') {
    const replies = await Promise.all(redis.nodes('master').map((node) => node.call(command, ...args)));
    return replies[0] as StoreReply;
  }
  return (await redis.call(command, ...args)) as StoreReply;
}

export function createRateLimiter(ctx: Pick<AppContext, 'redis' | 'redisPrefix' | 'logger'>, opts: LimiterOptions): RequestHandler {
  if (opts.limit === 0) return (_req, _res, next) => next();
  const logger = ctx.logger.child({ limiter: opts.name });
  // One store per limiter (express-rate-limit refuses a shared one); two processes, or two apps in
  // one process, that build the same limiter meet on the same keys.
  const store: Store | undefined = opts.perProcess
    ? undefined // express-rate-limit's own memory store
    : new HealingRedisStore({
        sendCommand: (command: string, ...args: string[]) => sendStoreCommand(ctx.redis, command, args),
        prefix: `${sharedTag(ctx.redisPrefix, `rl:${opts.name}`)}:`,
      });
  const keyOf = opts.key ?? clientIpKey;
  const limiter = rateLimit({
    windowMs: opts.windowMs ?? 60_000,
    limit: opts.limit,
    ...(store ? { store } : {}),
    legacyHeaders: true,
    standardHeaders: 'draft-8',
    identifier: opts.name,
    keyGenerator: (req) => keyOf(req),
    // Fail closed: the directory is public and unauthenticated, and its search reaches MongoDB; with
    // the counter away we cannot tell a crawler from a reader, so we answer 503 (with Retry-After)
    // rather than serve unmetered. Redis being away also fails /readyz, so balancers stop sending.
    passOnStoreError: false,
    logger: {
      error: (err, msg) => logger.error({ err }, msg ?? 'rate limiter error'),
      warn: (err, msg) => logger.warn({ err }, msg ?? 'rate limiter warning'),
    },
    handler: (_req, _res, next) => next(new HttpError(429, 'Too Many Attempts.')),
  });

  return (req, res, next) => {
    void limiter(req, res, (err?: unknown) => {
      if (err === undefined) {
        // Laravel sends the reset time only with a 429; the library sends it on every answer.
        res.removeHeader('X-RateLimit-Reset');
        next();
      } else if (err instanceof HttpError) {
        next(err);
      } else {
        logger.warn({ err }, 'rate limit store unavailable; refusing the request');
        next(new ServiceUnavailableError());
      }
    });
  };
}
