import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { connect } from 'node:net';
import { VERSION } from '../../src/version.js';
import { listen } from '../../src/lifecycle/http-server.js';
import { buildApp } from '../../src/app/http/app.js';

let t: TestContext;
beforeAll(async () => {
  t = await createTestContext();
});
afterAll(async () => {
  await t?.close();
});

describe('the version query and HTTP basics', () => {
  it('GET /version answers the package version as a JSON string', async () => {
    const res = await t.http.get('/version');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.text).toBe(JSON.stringify(VERSION));
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('echoes a well-formed X-Request-Id and makes one otherwise', async () => {
    const given = await t.http.get('/version').set('X-Request-Id', 'trace-123');
    expect(given.headers['x-request-id']).toBe('trace-123');
    const made = await t.http.get('/version').set('X-Request-Id', 'bad id with spaces');
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(t.logs.text).toContain('"id":"trace-123"');
  });

  it('answers unknown routes with a JSON 404', async () => {
    const res = await t.http.get('/no/such/route');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: 'Not Found.' });
  });

  it('answers malformed JSON with 400 and no internals', async () => {
    const res = await t.http.post('/version').set('Content-Type', 'application/json').send('{"a":');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: 'The request body is not valid JSON.' });
    expect(res.text).not.toMatch(/at .*\.js|SyntaxError|node_modules/);
  });

  it('refuses bodies over the limit with 413', async () => {
    const res = await t.http
      .post('/version')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ a: 'x'.repeat(200_000) }));
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ message: 'The request body is too large.' });
  });

  it('sends security headers and no X-Powered-By', async () => {
    const res = await t.http.get('/version');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBeDefined();
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['x-powered-by']).toBeUndefined();
  });

  it('GET /healthz and /readyz answer 200 when MongoDB and Redis answer', async () => {
    expect((await t.http.get('/healthz')).status).toBe(200);
    const ready = await t.http.get('/readyz');
    expect(ready.status).toBe(200);
    // Each country's breaker is part of the details; a closed one leaves the process ready.
    expect(ready.body).toEqual({
      status: 'ok',
      checks: { mongodb: 'ok', redis: 'ok' },
      upstream: { JP: { state: 'closed' }, US: { state: 'closed' } },
    });
  });

  it('never logs an api_token from a query string', async () => {
    await t.http.get('/version?api_token=SECRETSECRET123&x=1');
    expect(t.logs.text).not.toContain('SECRETSECRET123');
    expect(t.logs.text).toContain('api_token=[REDACTED]');
  });
});

describe('requests Node cannot parse', () => {
  it('answers a URL past the header limit with a JSON 431, and a malformed request line with a JSON 400', async () => {
    const running = await listen(buildApp(t.ctx, []), 0, '127.0.0.1');
    try {
      const long = await fetch(`${running.url}/api/user?q=${'a'.repeat(20_000)}`);
      expect(long.status).toBe(431);
      expect(long.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await long.json()).toEqual({ message: 'Request Header Fields Too Large.' });
      const { port } = new URL(running.url);
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write('NOT A REQUEST\r\n\r\n'));
        let text = '';
        socket.on('data', (d) => (text += d.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(raw).toContain('Content-Type: application/json');
      expect(raw.endsWith('{"message":"Bad Request."}')).toBe(true);
    } finally {
      await running.close();
    }
  });
});
