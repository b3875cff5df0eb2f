import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPipeline, type Pipeline, insertDue } from '../helpers/pipeline.js';
import { productModel } from '../../src/models/product.js';
import { startSchedulerRole } from '../../src/app/roles/scheduler.js';
import { asins, startPrivateRedis, until, type PrivateRedis } from './helpers.js';

/**
 * A running deployment (api, scheduler ticking every second, workers, simulator) on a Redis of the
 * test's own, configured as production must be (appendonly, noeviction).
 *
 * 1. Injects: the Redis process is SIGKILLed mid-run and started again on the same port after the
 *    api has noticed. Must hold: while it is away, /readyz and every route that needs Redis (the
 *    rate-limited directory and the account API) answer 503 with Retry-After, never 500 and never a hang;
 *    then everything recovers with no restart of ours; workers and the scheduler reconnect (products
 *    made due only after the restart are planned and refreshed); every due product is refreshed.
 * 2. Injects: FLUSHALL mid-run (every queue, lock and counter gone). Must hold: the products whose
 *    jobs vanished come due again when their lease ends (SCHEDULER_LEASE) and are all refreshed.
 * Measured: counts of 503 answers, of refreshed products, of upstream items served.
 */
let redis: PrivateRedis;
let p: Pipeline;
let token: string;
beforeAll(async () => {
  redis = await startPrivateRedis({ appendonly: true });
  p = await startPipeline({
    REDIS_URL: redis.url,
    QUOTA_RPS: '10',
    SIMULATOR_QUOTA_RPS: '10',
    SCHEDULER_REFRESH_CRON: '* * * * * *',
    SCHEDULER_LEASE: '4s',
    SCHEDULER_HORIZON_S: '5',
    DIRECTORY_RATE_LIMIT: '1000',
  });
  await startSchedulerRole(p.ctx);
  ({ token } = await p.ctx.users.create({ name: 'Fault', email: 'fault@example.com' }));
}, 30_000);
afterAll(async () => {
  await p?.close();
  await redis?.stop();
});

const products = () => productModel(p.ctx.mongo);

async function due(prefix: string, n: number): Promise<string[]> {
  const list = asins(prefix, n);
  await insertDue(p.ctx.mongo, list);
  return list;
}
const unrefreshed = (list: string[]) => products().countDocuments({ asin: mongoose.trusted({ $in: list }), last_attempt_at: null });

describe('Redis faults during a run', () => {
  it('Redis restarted: 503 while away, recovery by itself, every due product refreshed', { timeout: 60_000 }, async () => {
    // Slow answers keep work in flight when Redis dies.
    p.sim.faults.update({ latencyMs: 300 });
    const list = await due('B0RRST', 150);
    await until('some batches done before the crash', async () => (await unrefreshed(list)) <= 120);
    await redis.crash();

    await until('the api sees Redis gone', async () => (await p.http.get('/readyz')).status === 503);
    let unavailable = 0;
    for (const req of [
      () => p.http.get('/readyz'),
      () => p.http.get('/api/user'),
      () => p.http.get('/api/post?q=x'),
      () => p.http.get('/api/world').set('Authorization', `Bearer ${token}`),
      () => p.http.post('/api/watch/asin').set('Authorization', `Bearer ${token}`).send({ asin: 'B0RRSTNEW1' }),
    ]) {
      const res = await req();
      expect(res.status, res.text).toBe(503);
      if (res.body.message !== undefined) expect(res.headers['retry-after']).toBeDefined();
      unavailable++;
    }
    expect(unavailable).toBe(5);
    expect((await p.http.get('/readyz')).body.checks.mongodb).toBe('ok');
    // Routes that need only MongoDB or nothing keep answering.
    expect((await p.http.get('/version')).status).toBe(200);
    expect((await p.http.get('/healthz')).status).toBe(200);

    await redis.start();
    await until('the api recovers by itself', async () => (await p.http.get('/readyz')).status === 200, 15_000);
    await until('the directory answers again', async () => (await p.http.get('/api/user')).status === 200, 10_000);
    expect((await p.http.post('/api/watch/asin').set('Authorization', `Bearer ${token}`).send({ asin: 'B0RRSTNEW1' })).status).toBe(201);

    // Made due only now: only a reconnected scheduler plans them and only reconnected workers do them.
    const after = await due('B0RAFT', 30);
    await until('every due product refreshed', async () => (await unrefreshed([...list, ...after])) === 0, 40_000, 250);
    expect(await products().countDocuments({ asin: mongoose.trusted({ $in: [...list, ...after] }), status: 'pending' })).toBe(0);
    // The watch added after the restart is refreshed too (it is due at once).
    await until(
      'the new watch refreshed',
      async () => (await products().countDocuments({ asin: 'B0RRSTNEW1', last_attempt_at: mongoose.trusted({ $ne: null }) })) === 1,
      20_000,
      250,
    );
    p.sim.faults.update({ latencyMs: 0 });
  });

  it('Redis flushed: lost jobs come back with the lease, every due product refreshed', { timeout: 60_000 }, async () => {
    p.sim.faults.update({ latencyMs: 300 });
    const list = await due('B0RFLU', 150);
    await until('some batches done before the flush', async () => (await unrefreshed(list)) <= 120);
    const admin = redis.client();
    await admin.flushall();
    expect(await admin.dbsize()).toBeLessThan(20);
    const lost = await unrefreshed(list);
    expect(lost).toBeGreaterThan(0);
    // The api keeps answering: the counters it needs are recreated.
    expect((await p.http.get('/api/user')).status).toBe(200);
    expect((await p.http.get('/readyz')).status).toBe(200);
    await until('every due product refreshed after the flush', async () => (await unrefreshed(list)) === 0, 40_000, 250);
    p.sim.faults.update({ latencyMs: 0 });
  });
});
