import mongoose from 'mongoose';
import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completions, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { planCrawls } from '../../src/scheduling/crawls.js';
import { productModel } from '../../src/models/product.js';
import { eanImportModel, type EanImportFields } from '../../src/models/ean-import.js';
import { watchModel } from '../../src/models/watch.js';
import { eanCheckDigit } from '../../src/simulator/codes.js';

let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({ COUNTRIES: 'JP,US', UPDATE_WAIT: '10s' });
});
afterAll(async () => {
  await p?.close();
});

/** The first EAN (from a deterministic walk) whose JP listing passes `accept`. */
function eanWhere(accept: (own: string[], ean: string) => boolean): string {
  for (let i = 0; i < 100_000; i++) {
    const first12 = `490${String(i).padStart(9, '0')}`;
    const ean = first12 + eanCheckDigit(first12);
    if (accept(p.sim.catalog.asinsForEan('JP', ean), ean)) return ean;
  }
  throw new Error('no such EAN');
}
/** The first EAN that the simulator maps to exactly `n` ASINs in JP. */
const eanWith = (n: number): string => eanWhere((own) => own.length === n);

/** How many search pages the client reads for a code: on while a full page lists nothing else. */
function searchPages(country: 'JP' | 'US', ean: string): number {
  const hits = p.sim.catalog.search(country, ean);
  const own = new Set(p.sim.catalog.asinsForEan(country, ean));
  let page = 1;
  for (;;) {
    const items = hits.slice((page - 1) * 10, page * 10);
    if (page < 10 && items.length === 10 && items.every((a) => own.has(a))) page++;
    else return page;
  }
}

describe('EAN import end to end', () => {
  it('resolves in every country, adds the ASINs to the watchlist at priority 0 and finishes the import', async () => {
    const u = await p.user('ean@example.com');
    const ean = eanWith(2);
    const expected = p.sim.catalog.asinsForEan('JP', ean);
    const jp = completions(p.workers.imports.get('JP')!, 1);
    const us = completions(p.workers.imports.get('US')!, 1);
    const res = await p.http.post('/api/watch/ean').set(u.headers).send({ ean }).expect(202);
    await Promise.all([jp, us]);

    const imp = await p.http.get(`/api/watch/ean/${res.body.data.id}`).set(u.headers).expect(200);
    expect(imp.body.data.status).toBe('done');
    expect(imp.body.data.countries.find((c: { country: string }) => c.country === 'JP').asins.sort()).toEqual([...expected].sort());
    const entries = await watchModel(p.ctx.mongo)
      .find({ user_id: new mongoose.Types.ObjectId(u.id), kind: 'asin' })
      .lean();
    expect(entries.map((e) => e.key)).toEqual(expect.arrayContaining(expected));
    expect(entries.every((e) => e.priority === 0 && e.source === 'ean')).toBe(true);
    const products = await productModel(p.ctx.mongo)
      .find({ country: 'JP', asin: mongoose.trusted({ $in: expected }) })
      .lean();
    expect(products).toHaveLength(2);
    for (const d of products) {
      expect(d.ean).toContain(ean);
      expect(d.priority).toBe(0);
      expect(d.status).toBe('ok');
      expect(d.next_refresh_at).not.toBeNull();
    }
    // The import has ended: the same code may be imported again.
    const againDone = Promise.all([completions(p.workers.imports.get('JP')!, 1), completions(p.workers.imports.get('US')!, 1)]);
    const again = await p.http.post('/api/watch/ean').set(u.headers).send({ ean }).expect(202);
    expect(again.body.created).toBe(true);
    await againDone;
  });

  it('a code listed by more ASINs than a search page holds: one job per page, all of them watched', async () => {
    const u = await p.user('ean-many@example.com');
    const ean = eanWhere((own, code) => own.length > 20 && searchPages('JP', code) === 3);
    const own = p.sim.catalog.asinsForEan('JP', ean);
    const jp = completions(p.workers.imports.get('JP')!, 3);
    const us = completions(p.workers.imports.get('US')!, searchPages('US', ean));
    // Midway (page 2 taken), the import shows what page 1 found and that it is resolving.
    const midway = new Promise<EanImportFields | null>((resolve) => {
      const worker = p.workers.imports.get('JP')!;
      const onActive = (job: Job): void => {
        if (job.name !== 'ean.resolve' || (job.data as { page: number }).page !== 2) return;
        worker.off('active', onActive);
        resolve(
          eanImportModel(p.ctx.mongo)
            .findById((job.data as { importId: string }).importId)
            .lean(),
        );
      };
      worker.on('active', onActive);
    });
    const res = await p.http.post('/api/watch/ean').set(u.headers).send({ ean }).expect(202);
    const [jpJobs] = await Promise.all([jp, us]);
    const mid = (await midway)!;
    expect(mid.status).toBe('resolving');
    const midJp = mid.countries.find((c) => c.country === 'JP')!;
    expect(midJp.status).toBe('queued');
    expect(midJp.page).toBeGreaterThanOrEqual(2);
    expect(midJp.asins.length).toBeGreaterThanOrEqual(10);

    // Three jobs, pages 1 to 3, each one search call, and each taken by the limiter in its turn.
    expect(jpJobs.map((j) => [j.name, j.data.page])).toEqual([
      ['ean.resolve', 1],
      ['ean.resolve', 2],
      ['ean.resolve', 3],
    ]);
    for (let i = 1; i < jpJobs.length; i++) expect(jpJobs[i]!.processedOn!).toBeGreaterThanOrEqual(jpJobs[i - 1]!.processedOn! + 15);
    const imp = await p.http.get(`/api/watch/ean/${res.body.data.id}`).set(u.headers).expect(200);
    expect(imp.body.data.status).toBe('done');
    expect(imp.body.data.countries.find((c: { country: string }) => c.country === 'JP').asins.sort()).toEqual([...own].sort());
    const watched = await watchModel(p.ctx.mongo).countDocuments({
      user_id: new mongoose.Types.ObjectId(u.id),
      kind: 'asin',
      key: mongoose.trusted({ $in: own }),
    });
    expect(watched).toBe(own.length);
  });

  it('a page job that comes again after its progress was recorded spends no call and queues the page after it', async () => {
    const u = await p.user('ean-again@example.com');
    const ean = eanWhere((own, code) => own.length > 20 && searchPages('JP', code) === 3);
    const done = Promise.all([
      completions(p.workers.imports.get('JP')!, 3),
      completions(p.workers.imports.get('US')!, searchPages('US', ean)),
    ]);
    const res = await p.http.post('/api/watch/ean').set(u.headers).send({ ean }).expect(202);
    await done;
    const importId = res.body.data.id as string;
    // As if page 1's worker died after recording its progress and before adding page 2, and page 1
    // then ran again (its retry, or the sweep): the import is re-opened at page 2 for JP, and the
    // later pages' jobs are gone.
    await eanImportModel(p.ctx.mongo).updateOne(
      { _id: new mongoose.Types.ObjectId(importId), 'countries.country': 'JP' },
      { $set: { status: 'resolving', 'countries.$.status': 'queued', 'countries.$.page': 2 } },
    );
    const calls0 = p.sim.stats().countries.JP?.searchItems?.calls ?? 0;
    const again = completions(p.workers.imports.get('JP')!, 3);
    for (const page of [2, 3]) await p.ctx.jobs.queue('JP', 'import').remove(`ean-${importId}-JP-p${page}`);
    await p.ctx.jobs.add('ean.resolve', { country: 'JP', importId, userId: u.id, ean, page: 1 }, { jobId: `ean-${importId}-JP-retry` });
    const jobs = await again;
    expect(jobs.map((j) => [j.data.page, j.returnvalue.last])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    // Pages 2 and 3 were read again; page 1 was not.
    expect((p.sim.stats().countries.JP?.searchItems?.calls ?? 0) - calls0).toBe(2);
    expect((await eanImportModel(p.ctx.mongo).findById(importId).lean())?.status).toBe('done');
  });

  it('an EAN nobody lists ends not_found', async () => {
    const u = await p.user('ean-none@example.com');
    const ean = eanWith(0);
    const done = Promise.all([completions(p.workers.imports.get('JP')!, 1), completions(p.workers.imports.get('US')!, 1)]);
    const res = await p.http.post('/api/watch/ean').set(u.headers).send({ ean }).expect(202);
    await done;
    const imp = await eanImportModel(p.ctx.mongo).findById(res.body.data.id).lean();
    expect(imp?.status).toBe(p.sim.catalog.asinsForEan('US', ean).length ? 'done' : 'not_found');
    expect(imp?.pending_key).toBeUndefined();
  });
});

describe('browse crawl', () => {
  it('walks a watched node page by page, upserts its products at priority 0 and records the crawl', async () => {
    const u = await p.user('browse@example.com');
    await p.http.post('/api/watch/browse').set(u.headers).send({ browse: '2127209051' }).expect(201);
    const listed = [...new Set(p.sim.catalog.browse('JP', '2127209051'))];
    const pagesOf = (n: number): number => Math.min(10, Math.max(1, Math.ceil(n / 10)));
    const usListed = new Set(p.sim.catalog.browse('US', '2127209051')).size;
    // One job per page, each through the queue's limiter.
    const done = Promise.all([
      completions(p.workers.crawls.get('JP')!, pagesOf(listed.length)),
      completions(p.workers.crawls.get('US')!, pagesOf(usListed)),
    ]);
    expect(await planCrawls(p.planner)).toBe(2);
    // A second planning pass on the same day adds nothing new (the job ids are per node and day).
    await planCrawls(p.planner);
    const [jpJobs] = await done;
    expect(jpJobs.map((j) => (j.data as { page: number }).page)).toEqual(Array.from({ length: pagesOf(listed.length) }, (_, i) => i + 1));
    const lastPage = jpJobs.at(-1)!.returnvalue as { asins: number; last: boolean };
    expect(lastPage).toMatchObject({ asins: listed.length, last: true });
    const entry = await watchModel(p.ctx.mongo).findOne({ kind: 'browse', key: '2127209051' }).lean();
    expect(entry?.last_crawl_at).not.toBeNull();
    expect([listed.length, usListed]).toContain(entry?.last_crawl_count);
    const crawled = await productModel(p.ctx.mongo)
      .find({ country: 'JP', asin: mongoose.trusted({ $in: listed }) })
      .lean();
    expect(crawled.length).toBe(listed.length);
    expect(crawled.every((d) => d.priority === 0 && d.status === 'ok')).toBe(true);
  });
});

describe('GET|POST /api/world/update', () => {
  it('refreshes now and answers the fresh records, by GET and by POST', async () => {
    const u = await p.user('update@example.com');
    const res = await p.http.get('/api/world/update?asin=B0UPD00001,b0upd00002&country=US').set(u.headers);
    expect(res.status).toBe(200);
    // Every asked ASIN has a record, found or not (a not-found one says so in refresh.status).
    expect(res.body.data.map((r: { asin: string; country: string }) => `${r.country}:${r.asin}`)).toEqual([
      'US:B0UPD00001',
      'US:B0UPD00002',
    ]);
    for (const r of res.body.data) expect(r.refresh.last_attempt_at).not.toBeNull();
    const post = await p.http
      .post('/api/world/update')
      .set(u.headers)
      .send({ asin: ['B0UPD00003'] });
    expect(post.status).toBe(200);
    expect(post.body.data[0]).toMatchObject({ asin: 'B0UPD00003', country: 'JP' });
  });

  it.each([
    ['', 'asin'],
    ['asin=SHORT', 'asin'],
    [`asin=${Array.from({ length: 11 }, (_, i) => `B0UPD000${String(i).padStart(2, '0')}`).join(',')}`, 'asin'],
    ['asin=B0UPD00001&country=JP,US', 'country'],
    ['asin=B0UPD00001&country=DE', 'country'],
    ['asin=B0UPD00001&asin=B0UPD00002', 'asin'],
  ])('answers 422 for %s', async (query, field) => {
    const u = await p.user(`u422-${Math.random()}@example.com`);
    const res = await p.http.get(`/api/world/update?${query}`).set(u.headers);
    expect(res.status).toBe(422);
    expect(res.body.errors[field]).toHaveLength(1);
  });

  it('answers 202 with the job id when the wait runs out, and the job finishes later', async () => {
    const u = await p.user('update202@example.com');
    const worker = p.workers.updates.get('JP')!;
    const queue = p.ctx.jobs.queue('JP', 'forced');
    await queue.pause();
    const short = await startShortWaitApp();
    try {
      const res = await short.http.get('/api/world/update?asin=B0LATE0001').set(u.headers);
      expect(res.status).toBe(202);
      expect(res.body.job).toMatchObject({ country: 'JP', asins: ['B0LATE0001'] });
      const done = completions(worker, 1);
      await queue.resume();
      const [job] = await done;
      expect(job!.id).toBe(res.body.job.id);
    } finally {
      await short.close();
    }
  });
});

describe('a fatal upstream error', () => {
  it("answers the forced update 503, opens only that country's breaker and says so in a metric", async () => {
    const u = await p.user('fatal@example.com');
    p.sim.faults.update({ notEligible: ['US'] });
    try {
      const res = await p.http.get('/api/world/update?asin=B0FATAL001&country=US').set(u.headers);
      expect(res.status).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(res.body.message).toMatch(/^The upstream is refusing US \(AssociateNotEligible\)/);
      expect(await p.ctx.jobs.queue('US').isPaused()).toBe(true);
      expect(await p.ctx.jobs.queue('JP').isPaused()).toBe(false);
      const open = await p.ctx.metrics.breakerOpen.get();
      expect(open.values).toEqual([{ labels: { country: 'US' }, value: 1 }]);
      // Asked again, the answer comes before any job is queued.
      const again = await p.http.get('/api/world/update?asin=B0FATAL001&country=US').set(u.headers);
      expect(again.status).toBe(503);
    } finally {
      p.sim.faults.update({ notEligible: [] });
      await p.ctx.breakers.close('US');
    }
    expect(await p.ctx.jobs.queue('US').isPaused()).toBe(false);
  });
});

/** A second app on the same database and prefix, with a forced-update wait of 300 ms. */
async function startShortWaitApp() {
  const { loadConfig } = await import('../../config/env.js');
  const { buildApp } = await import('../../src/app/http/app.js');
  const { apiRoutes } = await import('../../src/app/http/api-routes.js');
  const { Resources } = await import('../../src/lifecycle/resources.js');
  const supertest = (await import('supertest')).default;
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
  const base = loadConfig({
    ...env,
    MONGODB_URI: 'mongodb://unused/',
    APP_KEY: 'base64:' + Buffer.alloc(32).toString('base64'),
    UPDATE_WAIT: '300ms',
  });
  const resources = new Resources(p.ctx.logger);
  const ctx = { ...p.ctx, resources, config: { ...p.ctx.config, workers: base.workers } };
  return { http: supertest(buildApp(ctx, apiRoutes)), close: () => resources.close() };
}
