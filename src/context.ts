import type { Connection } from 'mongoose';
import type { Config } from '../config/env.js';
import { generateAppKey, parseAppKey } from '../config/app-key.js';
import type { Logger } from './logger.js';
import { Resources } from './lifecycle/resources.js';
import { connectMongo } from './db/mongo.js';
import { closeRedis, createRedis, redisReady, type Redis } from './db/redis.js';
import { startEmbeddedMongo } from './embedded/mongo-server.js';
import { startEmbeddedRedis } from './embedded/redis-server.js';
import { readEmbeddedState, removeEmbeddedState, writeEmbeddedState } from './embedded/state-file.js';
import { EmbeddedUnavailableError } from './embedded/errors.js';
import { UserService } from './users/service.js';
import { registerModels } from './models/index.js';
import { JobProducer } from '../jobs/queues.js';
import { Metrics } from './metrics/registry.js';
import { DailyUsage } from './quota/daily-usage.js';
import { QuotaGovernor } from './quota/governor.js';

/**
 * Everything a role needs, built once at start-up and passed down. Nothing here is a module-level
 * singleton, so a test builds the real app on its own database and Redis prefix.
 */
export interface AppContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly resources: Resources;
  readonly mongo: Connection;
  /** Connection for commands issued while serving requests (fails fast when Redis is away). */
  readonly redis: Redis;
  readonly redisUrl: string;
  readonly redisPrefix: string;
  readonly appKey: Buffer;
  readonly users: UserService;
  /** Adds jobs to the country queues (the payloads are checked against jobs/registry.ts). */
  readonly jobs: JobProducer;
  /** This process's metrics (served at /metrics by the api, or on METRICS_PORT by other roles). */
  readonly metrics: Metrics;
  /** The MongoDB copy of the day's upstream calls per country (the governor's count survives Redis through it). */
  readonly usage: DailyUsage;
  /** Every upstream call's permit: the pace and the day's cap per country, shared by every process. */
  readonly quota: QuotaGovernor;
  /** True when this process started MongoDB and Redis itself. */
  readonly embedded: boolean;
}

export interface ContextOptions {
  /**
   * What to do when MONGODB_URI / REDIS_URL are unset: `start` the embedded servers (serving roles),
   * or `attach` to those of a running `shelfwatch all` (admin commands).
   */
  readonly embedded: 'start' | 'attach';
  /** Build missing indexes before serving (serving roles and tests; not admin commands). */
  readonly ensureIndexes: boolean;
  /** Tests: one database per file. */
  readonly dbName?: string;
  /** Process metrics (CPU, memory, event loop); tests turn them off. */
  readonly defaultMetrics?: boolean;
  /** Tests: one key prefix per file. */
  readonly redisPrefix?: string;
}

interface Endpoints {
  mongoUri: string;
  redisUrl: string;
  appKey: Buffer;
  embedded: boolean;
}

async function resolveEndpoints(config: Config, logger: Logger, resources: Resources, mode: ContextOptions['embedded']): Promise<Endpoints> {
  if (config.mongo.uri && config.redis.url && config.appKey) {
    return { mongoUri: config.mongo.uri, redisUrl: config.redis.url, appKey: config.appKey, embedded: false };
  }
  if (mode === 'attach') {
    const state = await readEmbeddedState(config.stateDir);
    const key = config.appKey ?? (state ? parseAppKey(state.appKey) : undefined);
    const mongoUri = config.mongo.uri ?? state?.mongoUri;
    const redisUrl = config.redis.url ?? state?.redisUrl;
    if (!mongoUri || !redisUrl || !key) {
      throw new EmbeddedUnavailableError(
        'no database to use: set MONGODB_URI, REDIS_URL and APP_KEY, or start `shelfwatch all` with nothing set in this directory first');
    }
    if (state) logger.info({ pid: state.pid }, 'using the embedded parts of the running shelfwatch');
    return { mongoUri, redisUrl, appKey: key, embedded: false };
  }

  let mongoUri = config.mongo.uri;
  if (!mongoUri) {
    const mongo = resources.own('embedded MongoDB', await startEmbeddedMongo(), (m) => m.stop());
    mongoUri = mongo.uri;
    logger.info({ uri: mongoUri }, 'embedded MongoDB started (memory only: data is lost on exit)');
  }
  let redisUrl = config.redis.url;
  if (!redisUrl) {
    const redis = resources.own('embedded Redis', await startEmbeddedRedis(), (r) => r.stop());
    redisUrl = redis.url;
    logger.info({ url: redisUrl }, 'embedded Redis started (memory only: data is lost on exit)');
  }
  let appKey = config.appKey;
  if (!appKey) {
    const generated = generateAppKey();
    appKey = parseAppKey(generated)!;
    logger.warn('APP_KEY is unset: using a random key for this run (tokens stored now cannot be read after a restart)');
  }
  const embedded = !config.mongo.uri || !config.redis.url;
  if (embedded) {
    const state = { pid: process.pid, mongoUri, redisUrl, appKey: `base64:${appKey.toString('base64')}` };
    await writeEmbeddedState(config.stateDir, state);
    resources.own('embedded state file', config.stateDir, (dir) => removeEmbeddedState(dir, process.pid));
  }
  return { mongoUri, redisUrl, appKey, embedded };
}

export async function buildContext(config: Config, logger: Logger, opts: ContextOptions): Promise<AppContext> {
  const resources = new Resources(logger);
  try {
    const ep = await resolveEndpoints(config, logger, resources, opts.embedded);
    const mongo = resources.own('MongoDB', await connectMongo({ uri: ep.mongoUri, dbName: opts.dbName }), (c) => c.close());
    registerModels(mongo);
    // Serving roles make sure every index exists (a no-op when it does; builds do not block writes on
    // MongoDB 4.2+). Dropping indexes that the schema no longer has is left to `db:sync-indexes`.
    if (opts.ensureIndexes) await Promise.all(Object.values(mongo.models).map((m) => m.createIndexes()));
    const redis = resources.own('Redis', createRedis(ep.redisUrl, 'command', logger, 'api'), closeRedis);
    await redisReady(redis, 10_000).catch((err: Error) => {
      throw new EmbeddedUnavailableError(`Redis at ${redactUrl(ep.redisUrl)} does not answer (${err.message}); check REDIS_URL`);
    });
    const redisPrefix = opts.redisPrefix ?? config.redis.prefix;
    const jobs = resources.own('job queues', new JobProducer(redis, redisPrefix, logger), (j) => j.close());
    const metrics = new Metrics({ defaultMetrics: opts.defaultMetrics ?? true });
    const usage = new DailyUsage(mongo);
    const w = config.workers;
    const quota = resources.own('quota governor', new QuotaGovernor(redis, redisPrefix, {
      quotas: w.quota, dayTimeZone: w.quotaDayTimeZone, onDemandShare: w.onDemandShare, onDemandReserve: w.onDemandReserve, usage, metrics,
    }), (g) => g.close());
    return {
      config,
      logger,
      resources,
      mongo,
      redis,
      redisUrl: ep.redisUrl,
      redisPrefix,
      jobs,
      metrics,
      usage,
      quota,
      appKey: ep.appKey,
      users: new UserService(mongo, ep.appKey),
      embedded: ep.embedded,
    };
  } catch (err) {
    await resources.close();
    throw err;
  }
}

/** For log lines: a URL without its password. */
export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '[unparseable URL]';
  }
}
