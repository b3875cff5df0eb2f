import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asins as asinList, completions, startPipeline, withQuotas, withWorkers, type Pipeline } from '../helpers/pipeline.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { productModel } from '../../src/models/product.js';

let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline();
});
afterAll(async () => {
  await p?.close();
});

describe('refresh pipeline (scheduler → queue → worker → MongoDB)', () => {
  it('a watched ASIN appears in /api/world after the worker ran; batches hold at most 10', async () => {
    const u = await p.user('pipe@example.com');
    const asins = asinList('B0PIPE', 23);
    for (const asin of asins) await p.http.post('/api/watch/asin').set(u.headers).send({ asin }).expect(201);

    const done = completions(p.workers.workers.get('JP')!, 3);
    const plan = await planCountry(p.planner, 'JP');
    expect(plan.enqueued).toEqual({ batches: 3, p1: 0, p0: 23 });
    const jobs = await done;
    for (const job of jobs) expect((job.data as { asins: string[] }).asins.length).toBeLessThanOrEqual(10);

    const docs = await productModel(p.ctx.mongo)
      .find({ asin: mongoose.trusted({ $in: asins }) })
      .lean();
    expect(docs).toHaveLength(23);
    const expected = new Map(asins.map((a) => [a, p.sim.catalog.lookup('JP', a, Date.now(), 'x').kind]));
    for (const d of docs) {
      expect(d.status).toBe(expected.get(d.asin) === 'found' ? 'ok' : expected.get(d.asin));
      expect(d.last_attempt_at).not.toBeNull();
      // Adaptive scheduling: a first observation says nothing of the rate yet, so a found product's
      // next refresh is the prior's interval, the geometric mean of REFRESH_MIN_INTERVAL (5 min) and
      // its priority's interval (a day); a product the upstream did not answer waits the whole day.
      const wait = d.next_refresh_at!.getTime() - d.last_attempt_at!.getTime();
      expect(wait).toBe(d.status === 'ok' ? Math.round(Math.sqrt(300_000 * 86_400_000)) : 86_400_000);
      if (d.status === 'ok') expect(d.change_rate).toBeCloseTo(3_600_000 / Math.sqrt(300_000 * 86_400_000), 9);
    }
    const found = asins.filter((a) => expected.get(a) === 'found');
    expect(found.length).toBeGreaterThan(15);
    const world = await p.http.get('/api/world?limit=100').set(u.headers).expect(200);
    expect(world.body.data.map((r: { asin: string }) => r.asin).sort()).toEqual(expect.arrayContaining(found));
    const one = world.body.data.find((r: { asin: string }) => r.asin === found[0]);
    expect(one.title).toEqual(expect.any(String));
    expect(one.refresh.status).toBe('ok');
    // Nothing left due: a second plan enqueues nothing.
    expect((await planCountry(p.planner, 'JP')).enqueued.batches).toBe(0);
  });

  it('when the quota is short, priority 1 goes before priority 0', async () => {
    const products = productModel(p.ctx.mongo);
    const now = Date.now();
    // 30 of each priority, the priority-0 ones overdue for longer.
    await products.insertMany([
      ...asinList('B0LOWP', 30).map((asin, i) => ({
        country: 'JP',
        asin,
        priority: 0,
        next_refresh_at: new Date(now - 3_600_000 - i),
        created_at: new Date(),
        status: 'ok',
      })),
      ...asinList('B0HIGH', 30).map((asin, i) => ({
        country: 'JP',
        asin,
        priority: 1,
        next_refresh_at: new Date(now - 1_000 - i),
        created_at: new Date(),
        status: 'ok',
      })),
    ]);
    // Budget: 4 calls (QUOTA 50/s × 45 s is far more, so cap it through a tiny horizon).
    const firstFour = completions(p.workers.workers.get('JP')!, 4);
    const plan = await planCountry(
      withQuotas(
        withWorkers(p.planner, (w) => ({ scheduler: { ...w.scheduler, horizonS: 4 } })),
        { JP: { perSecond: 1, burst: 1, perDay: 1e9 } },
      ),
      'JP',
    );
    expect(plan.budget).toBe(4);
    expect(plan.enqueued).toEqual({ batches: 4, p1: 30, p0: 10 });
    await firstFour;
    const leftLow = await products.countDocuments({ asin: mongoose.trusted({ $regex: '^B0LOWP' }), last_attempt_at: null });
    expect(leftLow).toBe(20);
    expect(await products.countDocuments({ asin: mongoose.trusted({ $regex: '^B0HIGH' }), last_attempt_at: null })).toBe(0);
    const rest = completions(p.workers.workers.get('JP')!, 2);
    await planCountry(p.planner, 'JP');
    await rest;
  });

  it('two schedulers planning at once enqueue every due product exactly once', async () => {
    const products = productModel(p.ctx.mongo);
    await products.insertMany(
      asinList('B0TWIN', 40).map((asin) => ({
        country: 'JP',
        asin,
        priority: 0,
        next_refresh_at: new Date(Date.now() - 5_000),
        created_at: new Date(),
        status: 'pending',
      })),
    );
    const done = completions(p.workers.workers.get('JP')!, 4);
    const [a, b] = await Promise.all([planCountry(p.planner, 'JP'), planCountry(p.planner, 'JP')]);
    const jobs = await done;
    // Without the scheduler's lock the two passes may both pick: the lease claim and the job ids
    // must still keep every ASIN to one job.
    const seen = jobs.flatMap((j) => (j.data as { asins: string[] }).asins).filter((x) => x.startsWith('B0TWIN'));
    expect(new Set(seen).size).toBe(seen.length);
    expect(a.enqueued.p0 + b.enqueued.p0).toBeGreaterThanOrEqual(40);
  });
});
