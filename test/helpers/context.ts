import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { inject } from 'vitest';
import mongoose from 'mongoose';
import supertest from 'supertest';
import { loadConfig, type Config } from '../../config/env.js';
import { generateAppKey } from '../../config/app-key.js';
import { buildContext, type AppContext } from '../../src/app/context.js';
import { createLogger } from '../../src/logger.js';
import { buildApp } from '../../src/app/http/app.js';
import { apiRoutes } from '../../src/app/http/api-routes.js';
import { buildOpenApiDocument } from '../../src/app/http/openapi/document.js';
import { checkingAnswers, OpenApiChecker } from './openapi-check.js';
import { dropKeys } from './redis-keys.js';

export const TEST_APP_KEY = generateAppKey();

/** Every log line of a test context, to assert on (and to prove tokens never reach a log). */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
  get text(): string {
    return this.lines.join('\n');
  }
}

export interface TestContext {
  readonly ctx: AppContext;
  readonly logs: LogCapture;
  readonly config: Config;
  /** supertest agent on the real app with every area; each answer is checked against the OpenAPI document. */
  readonly http: ReturnType<typeof supertest>;
  close(): Promise<void>;
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** Environment for a child process or a context: the test servers, a key, and what the test adds. */
export function testEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'test',
    MONGODB_URI: inject('mongoUri'),
    REDIS_URL: inject('redisUrl'),
    APP_KEY: TEST_APP_KEY,
    LOG_LEVEL: 'info',
    // `npm run test:cluster` (test/cluster/global-setup.ts): every context and child on the cluster.
    ...(inject('redisCluster') ? { REDIS_CLUSTER_NODES: inject('redisCluster')! } : {}),
    ...extra,
  };
}

/**
 * The real context and app on a database and Redis prefix of their own. Drops the database and the
 * prefix's keys on close.
 */
export async function createTestContext(
  extra: Record<string, string> = {},
  opts: { clock?: () => Date; commandEvents?: boolean } = {},
): Promise<TestContext> {
  const config = loadConfig(testEnv(extra));
  const logs = new LogCapture();
  const logger = createLogger(config, logs);
  const dbName = uniqueName('sw_test');
  const redisPrefix = uniqueName('swt');
  const ctx = await buildContext(config, logger, {
    embedded: 'start',
    ensureIndexes: true,
    dbName,
    redisPrefix,
    defaultMetrics: false,
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.commandEvents ? { commandEvents: true } : {}),
  });
  const app = buildApp(ctx, apiRoutes);
  return {
    ctx,
    logs,
    config,
    http: supertest(checkingAnswers(new OpenApiChecker(buildOpenApiDocument(config)), app)),
    async close() {
      if (ctx.mongo.readyState === 1) await ctx.mongo.dropDatabase().catch(() => undefined);
      if (ctx.redis.status === 'ready') await dropKeys(ctx.redis, redisPrefix).catch(() => undefined);
      await ctx.resources.close();
    },
  };
}

/** The test MongoDB URI with `dbName` as its database (for child processes, which read the URI). */
export function mongoUriFor(dbName: string): string {
  return inject('mongoUri').replace(/\/?(\?|$)/, `/${dbName}$1`);
}

/**
 * A database of the calling file's own for CLI child processes: their environment, and a
 * connection to inspect what they wrote. Drop it with `close()` in afterAll.
 */
export function cliDatabase(prefix: string): { env: Record<string, string>; conn: mongoose.Connection; close(): Promise<void> } {
  const dbName = uniqueName(prefix);
  const conn = mongoose.createConnection(inject('mongoUri'), { dbName });
  return {
    env: testEnv({ MONGODB_URI: mongoUriFor(dbName) }),
    conn,
    async close() {
      await conn.dropDatabase().catch(() => undefined);
      await conn.close();
    },
  };
}
