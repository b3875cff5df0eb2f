import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import mongoose from 'mongoose';
import { Types } from 'mongoose';
import { asins, completions, startPipeline, withWorkers, type Pipeline } from '../helpers/pipeline.js';
import { until } from '../helpers/until.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { productModel } from '../../src/models/product.js';
import { eanImportModel } from '../../src/models/ean-import.js';
import { watchModel } from '../../src/models/watch.js';
import { quotaDayOf } from '../../src/quota/quota-day.js';

/**
 * The quota governor in the product: real workers, the simulator over HTTP. The simulator keeps its
 * own token bucket at the same Q and answers 429 for any call beyond it, so "no 429" below means the
 * governor held the pace; its daily quota answers 429 with a day's quotaCode.
 */
let p: Pipeline;
const Q = 5;
beforeAll(async () => {
  p = await startPipeline({ QUOTA_RPS: String(Q), SIMULATOR_QUOTA_RPS: String(Q), WORKER_CONCURRENCY: '6', FORCED_SHARE: '0.4' });
});
afterAll(async () => {
  await p?.close();
});
afterEach(async () => {
  p.sim.faults.update({});
});

const stats = () => p.sim.stats().countries.JP?.getItems ?? { calls: 0, items: 0, throttled: 0, errors: 0 };

async function seed(prefix: string, n: number, priority: 0 | 1 = 0): Promise<string[]> {
  const list = asins(prefix, n);
  const due = new Date(Date.now() - 60_000);
  await productModel(p.ctx.mongo).insertMany(
    list.map((asin) => ({ country: 'JP', asin, priority, next_refresh_at: due, created_at: due, status: 'ok' })),
  );
  return list;
}

describe('pace and order', () => {
  it('serves a forced update ahead of a full backlog of refreshes, with no 429 from the upstream', async () => {
    const worker = p.workers.workers.get('JP')!;
    await seed('B0BKLG', 300);
    const throttled0 = stats().throttled;
    // 30 batches at 5 calls a second: six seconds of backlog.
    const all = completions(worker, 30);
    const plan = await planCountry(
      withWorkers(p.planner, (w) => ({ scheduler: { ...w.scheduler, horizonS: 6 } })),
      'JP',
    );
    expect(plan.enqueued.batches).toBe(30);
    await completions(worker, 2);
    const u = await p.user('ahead@example.com');
    const res = await p.http.get('/api/world/update?asin=B0FRNT0001').set(u.headers);
    expect(res.status).toBe(200);
    // Answered while most of the backlog still waits: it did not queue behind it.
    const left = await p.ctx.jobs.queue('JP').getJobCounts('prioritized', 'wait');
    expect((left.prioritized ?? 0) + (left.wait ?? 0)).toBeGreaterThanOrEqual(10);
    await all;
    expect(stats().throttled - throttled0).toBe(0);
  });

  it('a planned batch skips the products a forced update has taken over: one call per product', async () => {
    const worker = p.workers.workers.get('JP')!;
    const list = await seed('B0CLAM', 10, 1);
    // As the planner leaves them: claimed with its token until the lease ends (the batch's job is
    // added below, after the forced update, as if it had waited in the queue meanwhile).
    const claim = 'plan-claim-test';
    await productModel(p.ctx.mongo).updateMany(
      { asin: mongoose.trusted({ $in: list }) },
      { $set: { plan_token: claim, next_refresh_at: new Date(Date.now() + 600_000) } },
    );
    const u = await p.user('claim@example.com');
    const calls0 = stats().calls;
    const res = await p.http.get(`/api/world/update?asin=${list[0]},${list[1]}`).set(u.headers);
    expect(res.status).toBe(200);
    expect(stats().calls - calls0).toBe(1);
    // Two more products come due meanwhile: the batch fills the room the update left with them.
    const extra = await seed('B0CLMX', 2, 1);
    const done = completions(worker, 1);
    await p.ctx.jobs.add('refresh.p1', { country: 'JP', asins: list, due: Date.now() - 60_000, claim });
    const [job] = await done;
    expect(job!.returnvalue).toMatchObject({ skipped: 2, asins: [...list.slice(2), ...extra] });
    // One call of 10: the 8 still claimed and the 2 new; no product asked for twice.
    expect(stats().calls - calls0).toBe(2);
  });

  it('the same forced update asked twice while pending is one job', async () => {
    const updates = p.ctx.jobs.queue('JP', 'forced');
    await updates.pause();
    try {
      const a = await p.ctx.jobs.add(
        'forced.update',
        { country: 'JP', asins: ['B0DUPE0001', 'B0DUPE0002'] },
        { deduplication: { id: 'forced-JP-B0DUPE0001,B0DUPE0002' } },
      );
      const b = await p.ctx.jobs.add(
        'forced.update',
        { country: 'JP', asins: ['B0DUPE0001', 'B0DUPE0002'] },
        { deduplication: { id: 'forced-JP-B0DUPE0001,B0DUPE0002' } },
      );
      expect(b).toBe(a);
      expect(await updates.getJobCountByTypes('prioritized', 'wait')).toBe(1);
    } finally {
      await updates.obliterate({ force: true });
    }
  });
});

describe('batches stay full', () => {
  it('a burst of 25 new watches goes out in 3 calls, not 5: a part-filled batch waits SCHEDULER_COALESCE for more', async () => {
    const worker = p.workers.workers.get('JP')!;
    const planner = withWorkers(p.planner, (w) => ({ scheduler: { ...w.scheduler, coalesceMs: 2_000 } }));
    const products = productModel(p.ctx.mongo);
    const list = asins('B0BRST', 25);
    const t0 = Date.now();
    const add = (from: number, to: number, at: number) =>
      products.insertMany(
        list
          .slice(from, to)
          .map((asin) => ({ country: 'JP', asin, priority: 0, next_refresh_at: new Date(at), created_at: new Date(at), status: 'ok' })),
      );
    // The nudges of the first watches: 5 products due, a part-filled batch: held back.
    await add(0, 5, t0);
    const first = await planCountry(planner, 'JP', new Date(t0 + 250));
    expect(first.enqueued.batches).toBe(0);
    expect(first.recheckAt).toBe(t0 + 2_000);
    // The rest of the burst: two full batches go, the last 5 wait.
    await add(5, 25, t0 + 500);
    const done = completions(worker, 3);
    const second = await planCountry(planner, 'JP', new Date(t0 + 750));
    expect(second.enqueued).toMatchObject({ batches: 2, p0: 20 });
    // Once the oldest of them has waited the window, the part-filled batch goes as it is.
    const third = await planCountry(planner, 'JP', new Date(t0 + 2_600));
    expect(third.enqueued).toMatchObject({ batches: 1, p0: 5 });
    const jobs = await done;
    expect(jobs.map((j) => (j.data as { asins: string[] }).asins.length).sort()).toEqual([10, 10, 5]);
  });
});

describe("the day's cap, for every kind of work", () => {
  it('an upstream 429 for the day marks the day spent: forced updates 429, refreshes go back to MongoDB, EAN pages and crawls wait and say so', async () => {
    const worker = p.workers.workers.get('JP')!;
    const u = await p.user('dayspent@example.com');
    // The upstream's daily quota runs out after the calls made so far.
    p.sim.faults.update({ throttleBurst: 0 });
    const day = quotaDayOf(Date.now(), 'UTC');
    const spentUpstream = await p.ctx.quota.markDaySpent('JP');
    expect(spentUpstream.retryAt).toBe(day.end);

    const forced = await p.http.get('/api/world/update?asin=B0SPNT0001').set(u.headers);
    expect(forced.status).toBe(429);
    expect(forced.body.message).toMatch(/quota/);
    expect(Number(forced.headers['retry-after'])).toBeGreaterThan(0);

    // A refresh batch already queued gives its products back, due as they were.
    const list = await seed('B0SPNT', 10);
    const claim = 'test-claim';
    const dueAt = Date.now() - 60_000;
    await productModel(p.ctx.mongo).updateMany(
      { asin: mongoose.trusted({ $in: list }) },
      { $set: { plan_token: claim, next_refresh_at: new Date(Date.now() + 600_000) } },
    );
    const calls0 = stats().calls;
    const done = completions(worker, 1);
    await p.ctx.jobs.add('refresh.p0', { country: 'JP', asins: list, due: dueAt, claim });
    const [job] = await done;
    expect(job!.returnvalue).toMatchObject({ deferred: true });
    expect(stats().calls).toBe(calls0);
    const back = await productModel(p.ctx.mongo)
      .find({ asin: mongoose.trusted({ $in: list }) })
      .lean();
    for (const prod of back) {
      expect(prod.plan_token).toBeNull();
      expect(prod.next_refresh_at!.getTime()).toBe(dueAt);
    }

    // An EAN page waits for the next quota day, and the import says until when.
    const imp = await p.http.post('/api/watch/ean').set(u.headers).send({ ean: '4901234567894' });
    expect(imp.status).toBe(202);
    const waiting = await until('the import says it waits for the quota', async () => {
      const doc = await eanImportModel(p.ctx.mongo)
        .findById(new Types.ObjectId(imp.body.data.id as string))
        .lean();
      return doc?.countries.find((c) => c.country === 'JP')?.waiting_until ?? undefined;
    });
    expect(waiting.getTime()).toBe(day.end);
    const shown = await p.http.get(`/api/watch/ean/${imp.body.data.id}`).set(u.headers);
    expect(shown.body.data.countries[0].waiting_until).not.toBeNull();
    const delayed = await p.ctx.jobs.queue('JP', 'import').getJobs(['delayed']);
    expect(delayed.some((j) => j.name === 'ean.resolve')).toBe(true);

    // A crawl page waits too.
    await p.http.post('/api/watch/browse').set(u.headers).send({ browse: '2127209051' });
    await p.ctx.jobs.add('browse.crawl', { country: 'JP', nodeId: '2127209051', crawlId: 'crawl-test' }, { jobId: 'crawl-test-p1' });
    await until(
      'the crawl says it waits for the quota',
      async () => (await watchModel(p.ctx.mongo).findOne({ kind: 'browse', key: '2127209051' }).lean())?.crawl_waiting_until ?? undefined,
    );
    expect(stats().calls).toBe(calls0);
  });
});
