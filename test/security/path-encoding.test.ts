import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';

/**
 * A path segment whose percent-encoding does not decode (a lone `%`, a cut-off UTF-8 sequence, an
 * overlong or surrogate code) is the client's mistake: every route answers it with a 4xx in the
 * contract's error shape `{"message": …}`, never a 500, with or without a token, on the account API and C,
 * the docs, Bull Board and unknown paths alike.
 */
let t: TestContext;
let token: string;
const board = `Basic ${Buffer.from('ops:correct horse battery').toString('base64')}`;
beforeAll(async () => {
  t = await createTestContext({
    RATE_LIMIT_API: '0',
    DIRECTORY_RATE_LIMIT: '0',
    // Hundreds of refused credentials here on purpose: a 429 would hide the answer under test.
    RATE_LIMIT_AUTH_FAILURES: '0',
    BULL_BOARD_USER: 'ops',
    BULL_BOARD_PASSWORD: 'correct horse battery',
  });
  ({ token } = await t.ctx.users.create({ name: 'Path Tester', email: 'paths@example.com' }));
});
afterAll(async () => {
  await t?.close();
});

const BROKEN = [
  '%',
  '%%',
  '%2',
  'a%',
  '%ZZ',
  '%u0041',
  '%E0%A4%A',
  '%E0%A4',
  '%E0%A4%A%',
  '%C0%80',
  '%C3%28',
  '%ED%A0%80',
  '%F0%9F%98',
  '%FF',
  'B0%E0%A4%G1234',
  '%F4%90%80%80',
];

/** [method, path template with `{}` for the broken segment]. */
const ROUTES: readonly [string, string][] = [
  ['GET', '/api/world/asin/{}'],
  ['GET', '/api/world/ean/{}'],
  ['DELETE', '/api/watch/asin/{}'],
  ['DELETE', '/api/watch/browse/{}'],
  ['GET', '/api/watch/ean/{}'],
  ['GET', '/api/me/{}'],
  ['POST', '/api/world/update/{}'],
  ['GET', '/api/user/{}'],
  ['GET', '/api/post/{}'],
  ['GET', '/docs/assets/{}'],
  ['GET', '/docs/{}'],
  ['GET', '/{}'],
  ['GET', '/{}/version'],
  ['DELETE', '/nowhere/{}'],
  ['GET', '/admin/queues/{}'],
  ['GET', '/admin/queues/api/queues/{}'],
  ['PUT', '/admin/queues/api/queues/{}/retry/failed'],
];

type Auth = 'none' | 'bearer' | 'query' | 'board';

async function call(method: string, path: string, auth: Auth): Promise<{ status: number; body: unknown; type: string }> {
  const url = auth === 'query' ? `${path}?api_token=${token}` : path;
  let req = t.http[method.toLowerCase() as 'get'](url);
  if (auth === 'bearer') req = req.set('Authorization', `Bearer ${token}`);
  if (auth === 'board') req = req.set('Authorization', board);
  const res = await req;
  return { status: res.status, body: res.body as unknown, type: String(res.headers['content-type'] ?? '') };
}

describe('a path with broken percent-encoding', () => {
  it.each(['none', 'bearer', 'query', 'board'] as const)('is a 4xx {message} on every route (auth: %s)', async (auth) => {
    const wrong: string[] = [];
    for (const [method, template] of ROUTES) {
      for (const segment of BROKEN) {
        const path = template.replace('{}', segment);
        const res = await call(method, path, auth);
        const body = res.body as Record<string, unknown>;
        const shaped =
          res.type.startsWith('application/json') && Object.keys(body).join() === 'message' && typeof body.message === 'string';
        if (res.status < 400 || res.status >= 500 || !shaped) wrong.push(`${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('answers 400 where a route reads the segment', async () => {
    expect(await call('GET', '/api/world/asin/%E0%A4%A', 'bearer')).toMatchObject({ status: 400, body: { message: expect.any(String) } });
    expect(await call('DELETE', '/api/watch/browse/%', 'bearer')).toMatchObject({ status: 400 });
    // Before the token is even looked at: the request cannot name a resource.
    expect((await call('DELETE', '/api/watch/browse/%', 'none')).status).toBe(400);
    expect((await call('GET', '/admin/queues/%', 'none')).status).toBe(400);
  });

  it('logs no unhandled error for it', async () => {
    const from = t.logs.lines.length;
    await call('GET', '/api/world/asin/%C0%80', 'bearer');
    expect(t.logs.lines.slice(from).filter((l) => l.includes('unhandled error'))).toEqual([]);
  });
});
