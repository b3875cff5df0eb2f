import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { until } from '../helpers/until.js';
import { changeOf, pendingJobs, startTestDeliveryWorker, type TestDeliveryWorker } from '../helpers/deliveries.js';

/**
 * Webhook deliveries are fair between accounts: account A has hundreds of deliveries queued to a
 * receiver that answers 500 after 2 s, and account B's one new delivery still starts at the next
 * free slot, not behind A's backlog. Two delivery workers on Redis connections of their own stand
 * for two processes; each runs DELIVERY_CONCURRENCY=4 attempts at once.
 */
const SLOW_MS = 2_000;
const BACKLOG = 300;
const CONCURRENCY = 4;
let t: TestContext;
let rx: WebhookReceiver;
const workers: TestDeliveryWorker[] = [];

beforeAll(async () => {
  rx = await new WebhookReceiver().start();
  t = await createTestContext({
    COUNTRIES: 'JP',
    ENDPOINT_ALLOW_PRIVATE: 'true',
    DELIVERY_CONCURRENCY: String(CONCURRENCY),
    DELIVERY_RETRY_SCHEDULE: '5s,5m',
    DELIVERY_TIMEOUT: '10s',
    RATE_LIMIT_API: '0',
  });
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await t?.close();
  await rx?.close();
});

async function alertFor(email: string, asin: string, path: string): Promise<Record<string, string>> {
  const { token } = await t.ctx.users.create({ name: email, email });
  const headers = { Authorization: `Bearer ${token}` };
  const res = await t.http
    .post('/api/alerts')
    .set(headers)
    .send({ asin, country: 'JP', kind: 'any_change', webhook_url: `${rx.url}${path}` });
  expect(res.status).toBe(201);
  return headers;
}

describe('deliveries are fair between accounts', () => {
  it("one account's backlog to a slow failing receiver holds another's new delivery for about one attempt, not for the backlog", async () => {
    const a = await alertFor('backlog@example.com', 'B0FAIRBACK', '/slow');
    const b = await alertFor('newcomer@example.com', 'B0FAIRNEW1', '/fast');
    rx.script('/slow', Array(BACKLOG * 2).fill(500));
    rx.delay('/slow', SLOW_MS);
    workers.push(await startTestDeliveryWorker(t, 'fair-1'), await startTestDeliveryWorker(t, 'fair-2'));

    const backlog = Array.from({ length: BACKLOG }, (_, i) => changeOf('B0FAIRBACK', {}, { rank: i + 1 }));
    const enqueueStarted = Date.now();
    expect(await t.ctx.deliveries.enqueueFor(backlog)).toBe(BACKLOG);
    const enqueueMs = Date.now() - enqueueStarted;
    // Every slot of both workers holds one of A's attempts.
    await rx.waitFor('/slow', 2 * CONCURRENCY);

    const queuedAt = Date.now();
    expect(await t.ctx.deliveries.enqueueFor([changeOf('B0FAIRNEW1', {}, { rank: 1 })])).toBe(1);
    const [delivered] = await rx.waitFor('/fast', 1, 15_000);
    const waitedMs = delivered!.at - queuedAt;
    const slowSoFar = rx.at('/slow').length;
    console.log(
      `B's delivery started ${waitedMs} ms after it was queued, behind ${BACKLOG} of A's (${slowSoFar} of them tried so far); queuing A's ${BACKLOG} took ${enqueueMs} ms; in FIFO order it would have waited about ${Math.round(((BACKLOG - 2 * CONCURRENCY) / (2 * CONCURRENCY)) * SLOW_MS)} ms`,
    );
    // One attempt of A (2 s) at most, and some slack for a busy machine.
    expect(waitedMs).toBeLessThan(SLOW_MS + 1_500);
    // A's backlog is still there: B did not wait for it.
    expect(slowSoFar).toBeLessThan(4 * CONCURRENCY);
    const stillQueued = (await pendingJobs(t)).length;
    expect(stillQueued).toBeGreaterThan(BACKLOG - 4 * CONCURRENCY);

    await until('B’s delivery recorded', async () => (await t.http.get('/api/deliveries?status=delivered').set(b)).body.meta.total === 1);
    const pending = await t.http.get('/api/deliveries?status=pending').set(a);
    expect(pending.body.meta.total).toBe(BACKLOG);
  });
});
