import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mongoose from 'mongoose';
import { asins, completions, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { productModel } from '../../src/models/product.js';
import { eanCheckDigit } from '../../src/simulator/codes.js';

/**
 * One account hammers forced updates and EAN imports; another account's priority-1 products must
 * keep their interval. Forced updates go first in line, but while scheduled work waits they have
 * only FORCED_SHARE of Q (here 20 % against the refreshes' 60 %: one call in four), so the planned
 * refreshes get the rest. The test counts the forced updates answered while the refreshes ran, not
 * by a time: how long the setup takes (a Redis Cluster is slower) changes how much of the flood is
 * gone before the batches are queued, not what happens once they are.
 */
const FLOOD = 120;

let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({
    QUOTA_RPS: '20',
    SIMULATOR_QUOTA_RPS: '20',
    FORCED_SHARE: '0.2',
    WORKER_CONCURRENCY: '40',
    RATE_LIMIT_UPDATE: '1000',
    UPDATE_WAIT: '60s',
  });
});
afterAll(async () => {
  await p?.close();
});

describe('fair to every account', () => {
  it("a flood of forced updates and EAN imports from one account leaves another's priority-1 refreshes their share", async () => {
    const hammer = await p.user('hammer@example.com');
    const quiet = await p.user('quiet@example.com');
    // The quiet account's hourly products, due now.
    const mine = asins('B0QUIT', 60);
    for (const asin of mine.slice(0, 3)) await p.http.post('/api/watch/asin').set(quiet.headers).send({ asin, priority: 1 });
    const due = new Date(Date.now() - 1_000);
    await productModel(p.ctx.mongo).insertMany(
      mine.slice(3).map((asin) => ({ country: 'JP', asin, priority: 1, next_refresh_at: due, created_at: due, status: 'ok' })),
    );
    await productModel(p.ctx.mongo).updateMany({ asin: mongoose.trusted({ $in: mine }) }, { $set: { next_refresh_at: due } });

    // 120 forced updates of distinct ASINs at once (6 s of calls on their own), and EAN imports, from one account.
    let answered = 0;
    const flood = Array.from({ length: FLOOD }, (_, i) =>
      p.http
        .get(`/api/world/update?asin=B0HAMR${String(i).padStart(4, '0')}`)
        .set(hammer.headers)
        .then((r) => {
          answered++;
          return r.status;
        }),
    );
    for (let i = 0; i < 5; i++) {
      const body = `490123456${String(i).padStart(3, '0')}`;
      await p.http
        .post('/api/watch/ean')
        .set(hammer.headers)
        .send({ ean: body + eanCheckDigit(body) });
    }
    await new Promise((r) => setImmediate(r));

    // The quiet account's 6 batches are planned while the flood is in line.
    const w = p.workers.workers.get('JP')!;
    const t0 = Date.now();
    // What the refresh jobs did when, against the flood's answers: the failure message shows it.
    const trace: string[] = [];
    w.on('active', (j) => trace.push(`active ${j.name} +${Date.now() - t0}ms answered=${answered}`));
    w.on('completed', (j) => trace.push(`done ${j.name} +${Date.now() - t0}ms answered=${answered}`));
    w.on('failed', (j, err) => trace.push(`failed ${j?.name} +${Date.now() - t0}ms answered=${answered}: ${err.message}`));
    const refreshed = completions(w, 6);
    const plan = await planCountry(p.planner, 'JP');
    const before = answered;
    trace.push(`planned +${Date.now() - t0}ms answered=${answered}`);
    expect(plan.enqueued.p1).toBe(60);
    // Most of the flood is still in line behind the batches.
    expect(before).toBeLessThan(FLOOD - 40);
    await refreshed;
    // Their 6 calls went out beside a few of the flood's (one in four while both wait, the flood's
    // whole pace until the workers have taken the batches, and answers still on their way: 2 to 12
    // seen), not behind the rest of it (in line order, all 80 or more still waiting).
    const jobs = (await p.ctx.metrics.jobs.get()).values.filter((v) => String(v.labels.name).startsWith('refresh'));
    const calls = (await p.ctx.metrics.upstreamCalls.get()).values;
    trace.push(
      `jobs ${JSON.stringify(jobs.map((v) => [v.labels, v.value]))}`,
      `calls ${JSON.stringify(calls.map((v) => [v.labels, v.value]))}`,
    );
    expect(answered - before, trace.join('\n')).toBeLessThan(30);
    expect(await productModel(p.ctx.mongo).countDocuments({ asin: mongoose.trusted({ $in: mine }), last_attempt_at: null })).toBe(0);
    const statuses = await Promise.all(flood);
    expect(statuses.every((s) => s === 200)).toBe(true);
  });
});
