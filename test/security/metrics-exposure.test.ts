import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { startApi } from '../../src/app/roles/api.js';
import { UpstreamFailedError } from '../../src/core/errors.js';

/**
 * /metrics is served where the operator chooses, and costs Redis little however often it is read:
 * - METRICS_TOKEN set: `Authorization: Bearer <METRICS_TOKEN>` or 401;
 * - METRICS_PORT set: the api serves it on that port only, not on the public one;
 * - neither: only to a client on this host (loopback, not forwarded by a proxy);
 * - the queue gauges are read from Redis at most once every few seconds, concurrent scrapes sharing
 *   one read.
 * And a forced update the upstream failed answers 502 with a generic message and the request id,
 * the failure's text going to the log only.
 */
const METRICS_TOKEN = 'm'.repeat(20) + 'etrics-token-0123456789';
let plain: TestContext;
let withToken: TestContext;
let withPort: TestContext;
beforeAll(async () => {
  plain = await createTestContext({ RATE_LIMIT_API: '0' });
  withToken = await createTestContext({ METRICS_TOKEN });
  withPort = await createTestContext({ METRICS_PORT: '0', PORT: '0', HOST: '127.0.0.1' });
});
afterAll(async () => {
  await plain?.close();
  await withToken?.close();
  await withPort?.close();
});

describe('GET /metrics', () => {
  it('with neither METRICS_TOKEN nor METRICS_PORT: served to this host only', async () => {
    expect((await plain.http.get('/metrics')).status).toBe(200);
    for (const header of ['X-Forwarded-For', 'Forwarded', 'X-Real-IP']) {
      const res = await plain.http.get('/metrics').set(header, header === 'Forwarded' ? 'for=203.0.113.9' : '203.0.113.9');
      expect(res.status, header).toBe(404);
      expect(res.text).not.toContain('shelfwatch_');
    }
  });

  it('with METRICS_TOKEN: needs it as a Bearer token, compared in full', async () => {
    for (const auth of [
      undefined,
      'Bearer',
      `Bearer ${METRICS_TOKEN.slice(0, -1)}`,
      `Bearer ${METRICS_TOKEN}x`,
      `Basic ${METRICS_TOKEN}`,
    ]) {
      const req = withToken.http.get('/metrics');
      const res = await (auth ? req.set('Authorization', auth) : req);
      expect(res.status, String(auth)).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
      expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    }
    // From anywhere, with the token.
    const ok = await withToken.http.get('/metrics').set({ Authorization: `Bearer ${METRICS_TOKEN}`, 'X-Forwarded-For': '203.0.113.9' });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain('# TYPE shelfwatch_queue_jobs');
  });

  it('with METRICS_PORT: the api serves it there, and not on its public port', async () => {
    expect((await withPort.http.get('/metrics')).status).toBe(404);
    const api = await startApi(withPort.ctx);
    const ops = withPort.logs.lines
      .map((l) => JSON.parse(l) as { msg?: string; url?: string; role?: string })
      .find((l) => l.msg === 'metrics and health listening');
    expect(ops?.role).toBe('api');
    expect(ops?.url).not.toBe(api.url);
    expect((await fetch(`${api.url}/metrics`)).status).toBe(404);
    const scraped = await fetch(`${ops!.url}/metrics`);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('# TYPE shelfwatch_queue_jobs');
    expect((await fetch(`${ops!.url}/readyz`)).status).toBe(200);
  });

  it('reads the queues from Redis once for many scrapes, concurrent or in a row', async () => {
    const queue = plain.ctx.jobs.queue('JP', 'refresh');
    // Past any read an earlier scrape made.
    await new Promise((r) => setTimeout(r, 5_100));
    const counts = vi.spyOn(queue, 'getJobCounts');
    try {
      const answers = await Promise.all(Array.from({ length: 8 }, () => plain.http.get('/metrics')));
      for (let i = 0; i < 8; i++) answers.push(await plain.http.get('/metrics'));
      for (const res of answers) {
        expect(res.status).toBe(200);
        expect(res.text).toContain('shelfwatch_queue_jobs{country="JP",queue="refresh"');
      }
      expect(counts).toHaveBeenCalledTimes(1);
    } finally {
      counts.mockRestore();
    }
  });
});

describe('a forced update the upstream failed', () => {
  it('answers 502 with a generic message and the request id; the reason goes to the log', async () => {
    const { token } = await plain.ctx.users.create({ name: 'Forcer', email: 'forcer@example.com' });
    const reason = 'upstream 403 from https://creatorsapi.internal.example:8443/catalog/v1/getItems: {"secret":"partner-data"}';
    const request = vi.spyOn(plain.ctx.forcedUpdates, 'request').mockRejectedValue(new UpstreamFailedError(reason));
    try {
      const res = await plain.http
        .get('/api/world/update?asin=B0FAILED01')
        .set({ Authorization: `Bearer ${token}`, 'X-Request-Id': 'req-502-check' });
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ message: 'The upstream could not refresh the products. Request id: req-502-check.' });
      expect(res.text).not.toMatch(/creatorsapi|secret|partner|403/);
      const logged = plain.logs.lines.find((l) => l.includes('creatorsapi.internal.example'));
      expect(logged).toBeDefined();
      expect(logged).toContain('req-502-check');
    } finally {
      request.mockRestore();
    }
  });
});
