import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import supertest from 'supertest';
import { loadConfig } from '../../config/env.js';
import { buildContext, type AppContext } from '../../src/app/context.js';
import { createLogger } from '../../src/logger.js';
import { buildApp } from '../../src/app/http/app.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/embedded/redis-server.js';
import { LogCapture, testEnv, uniqueName } from '../helpers/context.js';

// A Redis of our own (a real redis-server child), so that stopping it does not disturb other tests.
let redis: EmbeddedRedis;
let ctx: AppContext;
beforeAll(async () => {
  redis = await startEmbeddedRedis();
  const config = loadConfig(testEnv({ REDIS_URL: redis.url }));
  ctx = await buildContext(config, createLogger(config, new LogCapture()), {
    embedded: 'start',
    ensureIndexes: true,
    dbName: uniqueName('sw_ready'),
  });
});
afterAll(async () => {
  await ctx?.mongo.dropDatabase().catch(() => undefined);
  await ctx?.resources.close();
  await redis?.stop();
});

describe('readiness', () => {
  it('turns 503 naming Redis when Redis stops answering, and the API keeps answering', async () => {
    const http = supertest(buildApp(ctx));
    expect((await http.get('/readyz')).status).toBe(200);

    const closed = new Promise<void>((resolve) => ctx.redis.once('close', () => resolve()));
    await redis.stop();
    await closed;

    const res = await http.get('/readyz');
    expect(res.status).toBe(503);
    expect(res.body.status).toBe('unavailable');
    expect(res.body.checks.mongodb).toBe('ok');
    expect(res.body.checks.redis).not.toBe('ok');
    expect((await http.get('/version')).status).toBe(200);
    expect((await http.get('/healthz')).status).toBe(200);
  });
});
