import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mongoose from 'mongoose';
import { asins, completions, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { productModel } from '../../src/models/product.js';
import { eanCheckDigit } from '../../src/simulator/codes.js';

/**
 * One account hammers forced updates and EAN imports; another account's priority-1 products must
 * keep their interval. Forced updates goes first in line, but while scheduled work waits it has
 * only FORCED_SHARE of Q (here 20 % of 20/s: 4 calls a second), so the planned refreshes get the
 * rest.
 */
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

    // 40 forced updates of distinct ASINs at once, and EAN imports, from one account.
    let answered = 0;
    const flood = Array.from({ length: 40 }, (_, i) =>
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
    const refreshed = completions(p.workers.workers.get('JP')!, 6);
    const plan = await planCountry(p.planner, 'JP');
    expect(plan.enqueued.p1).toBe(60);
    await refreshed;
    // They were served while most of the flood still waited: forced updates did not take the quota.
    expect(answered).toBeLessThan(30);
    expect(await productModel(p.ctx.mongo).countDocuments({ asin: mongoose.trusted({ $in: mine }), last_attempt_at: null })).toBe(0);
    const statuses = await Promise.all(flood);
    expect(statuses.every((s) => s === 200)).toBe(true);
  });
});
