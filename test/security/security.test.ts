import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, testEnv, uniqueName, type TestContext, mongoUriFor } from '../helpers/context.js';
import { exitOf, spawnCli, waitForLog } from '../helpers/cli.js';
import { hashToken } from '../../src/users/token.js';

/**
 * Security properties, each against the real app (and, for what spans processes, two real api
 * processes on one MongoDB database and one Redis prefix):
 * - tokens are stored only as a SHA-256 hash (plus the sealed copy), never logged (every token
 *   created is looked for in every log line of every process, after it was sent in the header, the
 *   query and the body of every route), never served by a listing;
 * - rotation invalidates the old token at once, in every process;
 * - Bull Board is unreachable without its credentials;
 * - rate limits hold across two api processes;
 * - bodies over BODY_LIMIT are refused with 413 before anything else runs;
 * - CORS is open on the directory only.
 */
let t: TestContext;
const tokens: string[] = [];
const basic = (u: string, p: string): string => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
beforeAll(async () => {
  t = await createTestContext({
    COUNTRIES: 'JP,US',
    BULL_BOARD_USER: 'ops',
    BULL_BOARD_PASSWORD: 'correct horse battery',
    BODY_LIMIT: '2kb',
    UPDATE_WAIT: '100ms',
    // The Bull Board test below makes over a hundred failed attempts on purpose; the limit on
    // failures has its own test (auth-failures.test.ts).
    RATE_LIMIT_AUTH_FAILURES: '0',
  });
});
afterAll(async () => {
  await t?.close();
});

async function newUser(name: string): Promise<string> {
  const { token } = await t.ctx.users.create({ name, email: `${name.toLowerCase().replace(/\W/g, '')}@example.com`, title: 'Engineer' });
  tokens.push(token);
  return token;
}

/** Every account API route, with the token in the header, the query, a JSON body and a form body. */
async function exerciseEveryRoute(http: TestContext['http'], token: string): Promise<number> {
  let answered = 0;
  const count = (res: { status: number }): void => {
    expect(res.status).toBeLessThan(500);
    answered++;
  };
  const gets = [
    '/api/me',
    '/api/watch',
    '/api/world',
    '/api/world/new',
    '/api/world/asin/B0SECURE01',
    '/api/world/ean/4901234567894',
    '/api/watch/ean/000000000000000000000000',
    '/api/world/update?asin=B0SECURE01',
    '/api/user',
    '/api/post',
    '/version',
    '/readyz',
    '/metrics',
  ];
  for (const path of gets) {
    count(await http.get(path).set('Authorization', `Bearer ${token}`));
    count(await http.get(`${path}${path.includes('?') ? '&' : '?'}api_token=${token}`));
  }
  const posts: [string, Record<string, unknown>][] = [
    ['/api/watch/asin', { asin: 'B0SECURE01', priority: 1 }],
    ['/api/watch/ean', { ean: '4901234567894' }],
    ['/api/watch/browse', { browse: '2351649051' }],
    ['/api/world/update', { asin: 'B0SECURE01' }],
    ['/api/watch/asin', { asin: 'not an asin' }],
  ];
  for (const [path, body] of posts) {
    count(await http.post(path).set('Authorization', `Bearer ${token}`).send(body));
    count(await http.post(path).send({ ...body, api_token: token }));
    count(
      await http
        .post(path)
        .type('form')
        .send(new URLSearchParams({ ...(body as Record<string, string>), api_token: token }).toString()),
    );
    count(await http.post(`${path}?api_token=${token}`).send(body));
  }
  count(await http.delete(`/api/watch/asin/B0SECURE01?api_token=${token}`));
  count(await http.delete('/api/watch/browse/2351649051').set('Authorization', `Bearer ${token}`));
  // Refused ones too: a broken body, an over-long body, a wrong token that looks like this one.
  count(await http.post(`/api/watch/asin?api_token=${token}`).set('Content-Type', 'application/json').send('{"asin":'));
  count(
    await http
      .post('/api/watch/asin')
      .set('Authorization', `Bearer ${token}`)
      .send({ asin: 'x'.repeat(5_000) }),
  );
  count(await http.get('/api/me').set('Authorization', `Bearer ${token.slice(0, -1)}X`));
  return answered;
}

describe('API tokens', () => {
  it('are stored as a hash, never logged, never listed', async () => {
    const a = await newUser('Alice Secure');
    const b = await newUser('Bob Secure');
    expect(await exerciseEveryRoute(t.http, a)).toBeGreaterThan(40);
    expect(await exerciseEveryRoute(t.http, b)).toBeGreaterThan(40);
    const rotated = await t.http.post('/api/me/token').set('Authorization', `Bearer ${b}`);
    expect(rotated.status).toBe(200);
    const b2 = rotated.body.data.api_token as string;
    tokens.push(b2);
    await exerciseEveryRoute(t.http, b2);

    // Stored: the SHA-256 of the token (and an AES-GCM sealed copy), never the token itself.
    const raw = await t.ctx.mongo.collection('users').find({}).toArray();
    const stored = JSON.stringify(raw);
    for (const token of tokens) expect(stored).not.toContain(token);
    expect(raw.map((u) => u.token_hash).sort()).toEqual([hashToken(a), hashToken(b2)].sort());

    // Listings: no token, no hash, no email.
    for (const path of ['/api/user', '/api/user?q=secure', '/api/post', '/api/user?limit=100']) {
      const res = await t.http.get(path);
      expect(res.status).toBe(200);
      for (const token of tokens) {
        expect(res.text).not.toContain(token);
        expect(res.text).not.toContain(hashToken(token));
      }
      expect(res.text).not.toMatch(/api_token|token_hash|token_cipher|@example\.com/);
    }
    // Logs: thousands of characters of request lines, and not one token among them.
    expect(t.logs.lines.length).toBeGreaterThan(150);
    for (const token of tokens) expect(t.logs.text).not.toContain(token);
  });
});

describe('Bull Board', () => {
  it('is unreachable without its credentials, whatever else is sent', async () => {
    const token = await newUser('Board Visitor');
    const paths = [
      '/admin/queues',
      '/admin/queues/',
      '/admin/queues/api/queues',
      '/admin/queues/api/queues/upstream-JP/clean/completed',
      '/admin/queues/static/js/main.js',
      '/admin/queues/queue/upstream-JP',
    ];
    const attempts: [string, Record<string, string>][] = [
      ['none', {}],
      ['wrong password', { Authorization: basic('ops', 'correct horse battery!') }],
      ['wrong user', { Authorization: basic('admin', 'correct horse battery') }],
      ['empty', { Authorization: basic('', '') }],
      ['user only', { Authorization: `Basic ${Buffer.from('ops').toString('base64')}` }],
      ['an API token', { Authorization: `Bearer ${token}` }],
      ['not base64', { Authorization: 'Basic !!!' }],
    ];
    let refused = 0;
    for (const path of paths) {
      for (const [, headers] of attempts) {
        for (const method of ['get', 'put', 'post'] as const) {
          const res = await t.http[method](path).set(headers);
          expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
          expect(res.body).toEqual({ message: 'Unauthenticated.' });
          refused++;
        }
      }
    }
    expect(refused).toBe(paths.length * attempts.length * 3);
    expect((await t.http.get('/admin/queues/api/queues').set('Authorization', basic('ops', 'correct horse battery'))).status).toBe(200);
  });
});

describe('request body size', () => {
  it('refuses bodies over BODY_LIMIT with 413 {message}, before authentication or any write', async () => {
    const token = await newUser('Big Body');
    const before = await t.ctx.mongo.collection('watches').countDocuments();
    const big = { asin: 'B0SECURE02', pad: 'x'.repeat(3_000) };
    const cases = [
      t.http.post('/api/watch/asin').set('Authorization', `Bearer ${token}`).send(big),
      t.http
        .post('/api/watch/asin')
        .type('form')
        .send(new URLSearchParams({ ...big, api_token: token }).toString()),
      t.http.post('/api/watch/asin').send(big),
      t.http.get('/api/user').set('Content-Type', 'application/json').send(JSON.stringify(big)),
      t.http.post('/version').send(big),
    ];
    for (const res of await Promise.all(cases)) {
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ message: 'The request body is too large.' });
    }
    expect(await t.ctx.mongo.collection('watches').countDocuments()).toBe(before);
    // Just under the limit is read (and answered on its merits).
    expect(
      (
        await t.http
          .post('/api/watch/asin')
          .set('Authorization', `Bearer ${token}`)
          .send({ asin: 'B0SECURE02', pad: 'x'.repeat(1_500) })
      ).status,
    ).toBe(201);
  });
});

describe('CORS', () => {
  it('is open on the directory only', async () => {
    const token = await newUser('Cors Check');
    const origin = 'https://evil.example';
    for (const res of [
      await t.http.get('/api/user').set('Origin', origin),
      await t.http.get('/api/post?page=0').set('Origin', origin),
      await t.http.delete('/api/user').set('Origin', origin),
      await t.http.options('/api/post').set('Origin', origin).set('Access-Control-Request-Method', 'GET'),
    ]) {
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    }
    const closed = [
      t.http.get('/api/me').set('Origin', origin).set('Authorization', `Bearer ${token}`),
      t.http.get('/api/world').set('Origin', origin).set('Authorization', `Bearer ${token}`),
      t.http.get('/api/watch').set('Origin', origin),
      t.http
        .options('/api/me')
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'GET')
        .set('Access-Control-Request-Headers', 'authorization'),
      t.http.options('/api/watch/asin').set('Origin', origin).set('Access-Control-Request-Method', 'POST'),
      t.http.get('/version').set('Origin', origin),
      t.http.get('/metrics').set('Origin', origin),
      t.http.get('/readyz').set('Origin', origin),
      t.http.get('/admin/queues').set('Origin', origin),
    ];
    for (const [i, res] of (await Promise.all(closed)).entries()) {
      expect(res.headers['access-control-allow-origin'], `request ${i}`).toBeUndefined();
      expect(res.headers['access-control-allow-methods'], `request ${i}`).toBeUndefined();
      expect(res.headers['access-control-allow-headers'], `request ${i}`).toBeUndefined();
    }
  });
});

describe('two api processes on one database and one Redis prefix', () => {
  const procs: ChildProcess[] = [];
  const logs: string[] = [];
  afterAll(() => {
    for (const c of procs) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });

  it('share the rate limits, see a rotation at once, and log no token', { timeout: 40_000 }, async () => {
    const uri = mongoUriFor(t.ctx.mongo.name);
    // A prefix of their own: the counters of this file's earlier requests are not theirs.
    const env = testEnv({
      MONGODB_URI: uri,
      REDIS_PREFIX: uniqueName('swsec'),
      PORT: '0',
      COUNTRIES: 'JP,US',
      DIRECTORY_RATE_LIMIT: '3',
      RATE_LIMIT_API: '4',
    });
    const urls: string[] = [];
    for (let i = 0; i < 2; i++) {
      const child = spawnCli(['api'], env);
      procs.push(child);
      child.stderr!.on('data', (d: Buffer) => logs.push(d.toString()));
      urls.push(String((await waitForLog(child, (l) => l.msg === 'api listening')).url));
    }
    const [A, B] = urls as [string, string];
    const get = (base: string, path: string, token?: string) =>
      fetch(`${base}${path}`, token ? { headers: { Authorization: `Bearer ${token}` } } : {});

    // Directory: 3 a minute per client, over both processes.
    expect((await get(A, '/api/user')).headers.get('x-ratelimit-remaining')).toBe('2');
    expect((await get(B, '/api/post')).headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await get(A, '/api/user')).status).toBe(200);
    const over = await get(B, '/api/user');
    expect(over.status).toBe(429);
    expect(await over.json()).toEqual({ message: 'Too Many Attempts.' });
    expect(over.headers.get('retry-after')).toMatch(/^\d+$/);

    // the account API: 4 a minute per account, over both processes.
    const limited = await newUser('Limited Account');
    const statuses: number[] = [];
    for (const base of [A, B, A, B, A, B]) statuses.push((await get(base, '/api/me', limited)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);

    // Rotation in A: the old token is refused by B at once, the new one accepted.
    const old = await newUser('Rotating Account');
    expect((await get(B, '/api/me', old)).status).toBe(200);
    const rotated = await fetch(`${A}/api/me/token`, { method: 'POST', headers: { Authorization: `Bearer ${old}` } });
    expect(rotated.status).toBe(200);
    const fresh = ((await rotated.json()) as { data: { api_token: string } }).data.api_token;
    tokens.push(fresh);
    expect((await get(B, '/api/me', old)).status).toBe(401);
    expect((await get(A, `/api/me?api_token=${old}`)).status).toBe(401);
    expect((await get(B, '/api/me', fresh)).status).toBe(200);

    for (const child of procs) child.kill('SIGTERM');
    for (const child of procs) expect((await exitOf(child)).code).toBe(0);
    const all = logs.join('');
    expect(all).toContain('"url":"/api/me');
    for (const token of tokens) expect(all).not.toContain(token);
  });
});
