import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';

/**
 * The API token never reaches a log line, however the request spells it. The query parser decodes
 * parameter names, so `api%5Ftoken` and `%61pi_token` authenticate like `api_token`: the logged URL
 * must be rebuilt from the decoded names, not matched against the raw text. Every spelling the app
 * accepts is checked to authenticate (so the test keeps up with the parser), and every spelling
 * that only looks like a token's name is checked to be redacted too.
 */
let t: TestContext;
let token: string;
beforeAll(async () => {
  t = await createTestContext({ RATE_LIMIT_API: '0', DIRECTORY_RATE_LIMIT: '0' });
  ({ token } = await t.ctx.users.create({ name: 'Log Reader', email: 'logs@example.com' }));
});
afterAll(async () => {
  await t?.close();
});

/** Query spellings of the token's name that the app accepts (it answers 200 on /api/me). */
const ACCEPTED_QUERY_KEYS = ['api_token', 'api%5Ftoken', 'api%5ftoken', '%61pi_token', '%61%70%69%5F%74%6F%6B%65%6E', 'api_t%6Fken'];

/** Spellings the app refuses, but which a log line must not show either. */
const LOOKALIKE_QUERY_KEYS = [
  'API_TOKEN',
  'Api%5FToken',
  'token',
  'TOKEN',
  '%74oken',
  'api_token[]',
  'api_token%5B%5D',
  'api%20token',
  'api+token',
  'api_token%00',
  'access_token',
];

/** The log lines since `from` (a count of lines) that contain `needle`. */
function linesWith(needle: string, from: number): string[] {
  return t.logs.lines.slice(from).filter((l) => l.includes(needle));
}

describe('request log lines', () => {
  it('authenticate every accepted query spelling and log none of them', async () => {
    const from = t.logs.lines.length;
    for (const key of ACCEPTED_QUERY_KEYS) {
      const res = await t.http.get(`/api/me?${key}=${token}&page=1`);
      expect(res.status, key).toBe(200);
    }
    expect(linesWith(token, from)).toEqual([]);
    // The rest of the query stays readable.
    expect(t.logs.text).toContain('/api/me?api_token=[REDACTED]&page=1');
  });

  it('redact lookalike names too, alone, repeated and after other parameters', async () => {
    const from = t.logs.lines.length;
    for (const key of LOOKALIKE_QUERY_KEYS) {
      await t.http.get(`/api/me?${key}=${token}`);
      await t.http.get(`/version?x=1&${key}=${token}&${key}=${token}`);
      await t.http.get(`/api/world?country=JP&&${key}=${token}`);
    }
    expect(linesWith(token, from)).toEqual([]);
  });

  it('never log the Authorization header or a token in a JSON or form body', async () => {
    const from = t.logs.lines.length;
    expect((await t.http.get('/api/me').set('Authorization', `Bearer ${token}`)).status).toBe(200);
    await t.http.get('/api/me').set('Authorization', `Basic ${Buffer.from(`user:${token}`).toString('base64')}`);
    await t.http.get('/api/me').set('Cookie', `session=${token}`).set('X-Api-Token', token);
    const rotated = await t.http.post('/api/me/token').send({ api_token: token, note: token });
    expect(rotated.status).toBe(200);
    const third = rotated.body.data.api_token as string;
    const { token: second } = await t.ctx.users.create({ name: 'Form Poster', email: 'form@example.com' });
    const form = await t.http.post('/api/watch/asin').type('form').send(`asin=B0LOGTEST1&api%5Ftoken=${second}`);
    expect(form.status).toBe(201);
    await t.http.post('/api/watch/asin').set('Content-Type', 'application/json').send(`{"api\\u005ftoken":"${second}","asin":`);
    await t.http.post('/api/watch/asin').send({ asin: 'x'.repeat(50), api_token: second });
    for (const secret of [token, second, third, Buffer.from(`user:${token}`).toString('base64')])
      expect(linesWith(secret, from)).toEqual([]);
  });

  it('survive odd and broken query strings', async () => {
    const from = t.logs.lines.length;
    const odd = [
      '/version?',
      '/version?&&&',
      '/version?=',
      '/version?==x',
      '/version?%',
      '/version?%E0%A4%A=1',
      '/version?a=%ZZ&b=%',
      '/version??api_token=x',
      '/version?__proto__=1&constructor=2',
      `/version?${'a=1&'.repeat(2_000)}api_token=${token}`,
    ];
    for (const url of odd) expect((await t.http.get(url)).status, url).toBe(200);
    expect(linesWith(token, from)).toEqual([]);
    expect(t.logs.lines.slice(from).filter((l) => l.includes('"url":"/version')).length).toBeGreaterThanOrEqual(odd.length);
  });
});
