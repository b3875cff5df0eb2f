import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { createAlert, testAccount } from '../helpers/deliveries.js';
import { endpointModel } from '../../src/models/endpoint.js';
import { TestSendLimits } from '../../src/alerts/deliveries/test-limits.js';
import { ServiceUnavailableError, TooManyRequestsError } from '../../src/core/errors.js';

/**
 * The test button's limits under load: tests to one endpoint an hour, tests of one account a day
 * (both counted in Redis), the cap on tests in flight in a process, and no tests to a disabled
 * endpoint. Real receivers on loopback; 200 requests at once.
 */
let t: TestContext;
let rx: WebhookReceiver;
const PER_HOUR = 5;
const PER_DAY = 12;

beforeAll(async () => {
  rx = await new WebhookReceiver().start();
  t = await createTestContext({
    COUNTRIES: 'JP',
    ENDPOINT_ALLOW_PRIVATE: 'true',
    RATE_LIMIT_API: '0',
    ALERT_TESTS_PER_HOUR: String(PER_HOUR),
    ALERT_TESTS_PER_DAY: String(PER_DAY),
  });
});

afterAll(async () => {
  await t?.close();
  await rx?.close();
});

const testAlert = (headers: Record<string, string>, id: string) => t.http.post(`/api/alerts/${id}/test`).set(headers);

/** How many answers of each status, and every 429 checked for its Retry-After and message. */
function tally(answers: Awaited<ReturnType<typeof testAlert>>[], maxRetryAfter: number): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const res of answers) {
    counts[res.status] = (counts[res.status] ?? 0) + 1;
    if (res.status === 429) {
      const after = Number(res.headers['retry-after']);
      expect(after).toBeGreaterThanOrEqual(1);
      expect(after).toBeLessThanOrEqual(maxRetryAfter);
      expect(res.body.message).toMatch(/ALERT_TESTS_PER_(HOUR|DAY)/);
    }
  }
  return counts;
}

describe('the test button under a burst', () => {
  it('200 tests of one alert at once reach its target ALERT_TESTS_PER_HOUR times; the rest answer 429 with Retry-After', async () => {
    const a = await testAccount(t, 'burst-one@example.com');
    const alert = await createAlert(t, a.headers, { asin: 'B0BURST001', kind: 'any_change', webhook_url: `${rx.url}/burst-one` });
    const answers = await Promise.all(Array.from({ length: 200 }, () => testAlert(a.headers, alert.id)));
    expect(tally(answers, 3_600)).toEqual({ 200: PER_HOUR, 429: 200 - PER_HOUR });
    for (const res of answers.filter((r) => r.status === 200)) expect(res.body.data.outcome).toBe('delivered');
    expect(rx.at('/burst-one')).toHaveLength(PER_HOUR);
    // Later tests are refused too, until the hour's window renews.
    const again = await testAlert(a.headers, alert.id);
    expect(again.status).toBe(429);
    expect(rx.at('/burst-one')).toHaveLength(PER_HOUR);
  });

  it('200 tests over four targets of one account send ALERT_TESTS_PER_DAY in all, each target at most its hourly limit', async () => {
    const a = await testAccount(t, 'burst-many@example.com');
    const alerts = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        createAlert(t, a.headers, { asin: `B0BURSTM0${n}`, kind: 'any_change', webhook_url: `${rx.url}/burst-many-${n}` }),
      ),
    );
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => testAlert(a.headers, alerts[i % 4]!.id)));
    expect(tally(answers, 86_400)).toEqual({ 200: PER_DAY, 429: 200 - PER_DAY });
    const reached = [1, 2, 3, 4].map((n) => rx.at(`/burst-many-${n}`).length);
    expect(reached.reduce((x, y) => x + y, 0)).toBe(PER_DAY);
    for (const n of reached) expect(n).toBeLessThanOrEqual(PER_HOUR);
    // Another account's tests are its own.
    const b = await testAccount(t, 'burst-other@example.com');
    const other = await createAlert(t, b.headers, { asin: 'B0BURSTOTH', kind: 'any_change', webhook_url: `${rx.url}/burst-other` });
    expect((await testAlert(b.headers, other.id)).status).toBe(200);
  });

  it('answers 409 for a disabled endpoint, sending and counting nothing', async () => {
    const a = await testAccount(t, 'disabled-test@example.com');
    const alert = await createAlert(t, a.headers, { asin: 'B0DISABLED', kind: 'any_change', webhook_url: `${rx.url}/disabled` });
    await endpointModel(t.ctx.mongo).updateOne(
      { _id: new Types.ObjectId(alert.endpoint_id) },
      { $set: { disabled_at: new Date(), disabled_reason: 'the receiver answered 410 Gone' } },
    );
    const res = await testAlert(a.headers, alert.id);
    expect(res.status).toBe(409);
    expect(res.body.message).toBe(
      `The alert's endpoint is disabled (the receiver answered 410 Gone): enable it with POST /api/webhooks/${alert.endpoint_id}/enable, then test it.`,
    );
    expect(rx.at('/disabled')).toHaveLength(0);
    await t.http.post(`/api/webhooks/${alert.endpoint_id}/enable`).set(a.headers).expect(200);
    const sent = await Promise.all(Array.from({ length: PER_HOUR }, () => testAlert(a.headers, alert.id)));
    expect(sent.map((r) => r.status)).toEqual(Array(PER_HOUR).fill(200));
  });
});

describe('what a test answers', () => {
  it('a target nothing listens on is unreachable, without the socket error or the address', async () => {
    const closed = await new WebhookReceiver().start();
    const url = `${closed.url}/gone`;
    await closed.close();
    const a = await testAccount(t, 'unreachable@example.com');
    const alert = await createAlert(t, a.headers, { asin: 'B0UNREACH1', kind: 'any_change', webhook_url: url });
    const res = await testAlert(a.headers, alert.id);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      outcome: 'unreachable',
      status: null,
      ok: false,
      error:
        'the target could not be reached (its name did not resolve, the connection failed, or its address is not one this server calls)',
    });
    expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|getaddrinfo/);
  });
});

describe('tests in flight in one process', () => {
  it('past ALERT_TESTS_IN_FLIGHT answers 503 and gives back what it counted', async () => {
    const prefix = `swt_inflight_${Date.now().toString(36)}`;
    const limits = new TestSendLimits(t.ctx.redis, prefix, { perTargetPerHour: 2, perAccountPerDay: 0, inFlight: 1 });
    const user = new Types.ObjectId();
    const endpoint = new Types.ObjectId();
    try {
      const first = await limits.acquire(user, endpoint);
      expect(limits.running).toBe(1);
      await expect(limits.acquire(user, endpoint)).rejects.toBeInstanceOf(ServiceUnavailableError);
      first.release();
      first.release();
      expect(limits.running).toBe(0);
      // The refused one counted nothing: the second of two an hour is still there, then none.
      (await limits.acquire(user, endpoint)).release();
      const over = await limits.acquire(user, endpoint).catch((e: unknown) => e);
      expect(over).toBeInstanceOf(TooManyRequestsError);
      expect((over as TooManyRequestsError).headers['Retry-After']).toMatch(/^\d+$/);
      // The counters carry the group's hash tag, so they share a slot on a cluster.
      expect(await t.ctx.redis.exists(`{${prefix}:tests}:endpoint:${endpoint.toHexString()}`)).toBe(1);
    } finally {
      await t.ctx.redis.del(`{${prefix}:tests}:endpoint:${endpoint.toHexString()}`);
    }
  });
});
