import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mongoose from 'mongoose';
import { createTestContext, mongoUriFor, testEnv, type TestContext } from '../helpers/context.js';
import { runCli } from '../helpers/cli.js';
import { until } from '../helpers/until.js';
import { PostService } from '../../src/posts/service.js';
import { userModel } from '../../src/models/user.js';
import { postModel } from '../../src/models/post.js';
import { formatDateTime } from '../../src/core/dates.js';
import { buildApp } from '../../src/app/http/app.js';
import { apiRoutes } from '../../src/app/http/api-routes.js';
import supertest from 'supertest';

let t: TestContext;
beforeAll(async () => {
  // A zone east of UTC, so dates prove they are converted; a limit no test here reaches.
  t = await createTestContext({ APP_TIMEZONE: 'Asia/Tokyo', DIRECTORY_RATE_LIMIT: '100000' });
});
afterAll(async () => {
  await t?.close();
});

interface Envelope {
  data: Record<string, unknown>[];
  links: { first: string; last: string; prev: string | null; next: string | null };
  meta: {
    current_page: number;
    from: number | null;
    to: number | null;
    last_page: number;
    per_page: number;
    total: number;
    path: string;
    links: unknown[];
  };
}

const HOST = 'dir.example';
async function get(
  path: string,
): Promise<{ status: number; body: Envelope & { message?: string; errors?: Record<string, string[]> }; headers: Record<string, string> }> {
  const res = await t.http.get(path).set('Host', HOST);
  return { status: res.status, body: res.body as never, headers: res.headers as Record<string, string> };
}
const local = (absolute: string): string => {
  const u = new URL(absolute);
  expect(u.origin).toBe(`http://${HOST}`);
  return u.pathname + u.search;
};

/** Follows `links.next` from the first page to the last; returns every id seen, in order. */
async function walk(first: string): Promise<{ ids: string[]; total: number }> {
  const ids: string[] = [];
  let url: string | null = first;
  let total = -1;
  for (let guard = 0; url && guard < 100; guard++) {
    const res = await get(url);
    expect(res.status).toBe(200);
    total = res.body.meta.total;
    ids.push(...res.body.data.map((r) => r.id as string));
    url = res.body.links.next ? local(res.body.links.next) : null;
  }
  return { ids, total };
}

describe('public directory on empty collections', () => {
  it('answers an empty page: last_page 1, from/to null, no prev/next', async () => {
    for (const path of ['/api/user', '/api/post']) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([]);
      expect(res.body.links).toEqual({
        first: `http://${HOST}${path}?page=1`,
        last: `http://${HOST}${path}?page=1`,
        prev: null,
        next: null,
      });
      expect(res.body.meta).toMatchObject({
        current_page: 1,
        from: null,
        to: null,
        last_page: 1,
        per_page: 20,
        total: 0,
        path: `http://${HOST}${path}`,
      });
    }
  });
});

describe('public directory with data', () => {
  const ids: Record<string, string> = {};
  const FILLERS = 22;

  beforeAll(async () => {
    const users = t.ctx.users;
    const alice = await users.create({
      name: 'Alice Anderson',
      email: 'alice@example.com',
      title: 'TypeScript engineer',
      avatar: 'https://example.com/a.png',
      url: 'https://alice.example',
      tags: ['ts', 'node'],
      message: 'I love **Node.js** and 東京都のラーメン.',
    });
    const sato = await users.create({
      name: '佐藤 翔太',
      email: 'sato@example.com',
      title: 'デザイナー',
      message: '京都在住のデザイナーです。',
    });
    const mallory = await users.create({
      name: 'Mallory',
      email: 'mallory@example.com',
      message: 'Hi <script>alert(1)</script>\n\n<img src=x onerror="alert(2)">\n\n[x](javascript:alert(3))',
    });
    ids.alice = alice.user.id as string;
    ids.sato = sato.user.id as string;
    ids.mallory = mallory.user.id as string;
    for (let i = 0; i < FILLERS; i++)
      await users.create({ name: `Filler ${i}`, email: `filler${i}@example.com`, message: `filler text ${i}` });
    // Many equal timestamps, so the order of pages rests on the _id tie-break.
    await userModel(t.ctx.mongo).updateMany(
      { name: /^Filler/ },
      { $set: { created_at: new Date('2026-01-01T00:00:00Z') } },
      { timestamps: false, overwriteImmutable: true },
    );

    const posts = new PostService(t.ctx.mongo);
    const p1 = await posts.create(alice.user._id, {
      title: 'Hiring a Go engineer',
      message: 'Remote. *Paid*.\n\n- Go\n- gRPC',
      url: 'https://jobs.example/1',
    });
    const p2 = await posts.create(sato.user._id, { title: 'デザイナー募集', message: '東京のスタートアップです。' });
    ids.p1 = p1.id as string;
    ids.p2 = p2.id as string;
    for (let i = 0; i < 10; i++) await posts.create(mallory.user._id, { title: `Post ${i}`, message: `body ${i}` });
  });

  it('serves exactly the contract fields of a user, with sanitised HTML and local dates', async () => {
    const res = await get('/api/user?q=alice');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    const u = res.body.data[0]!;
    expect(Object.keys(u)).toEqual(['id', 'name', 'avatar', 'title', 'message', 'url', 'image', 'tags', 'created_at', 'updated_at']);
    expect(u).toMatchObject({
      id: ids.alice,
      name: 'Alice Anderson',
      avatar: 'https://example.com/a.png',
      title: 'TypeScript engineer',
      url: 'https://alice.example',
      image: null,
      tags: ['ts', 'node'],
    });
    expect(u.message).toContain('<strong>Node.js</strong>');
    const stored = await userModel(t.ctx.mongo).findById(ids.alice).lean();
    expect(u.created_at).toBe(formatDateTime(stored!.created_at, 'Asia/Tokyo'));
    expect(u.updated_at).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(JSON.stringify(res.body)).not.toMatch(/alice@example\.com|token|email|_id|search_keys|message_md/);
  });

  it('leaves a <script>, an onerror and a javascript: link inert', async () => {
    const res = await get('/api/user?q=mallory');
    const message = res.body.data[0]!.message as string;
    expect(message).not.toMatch(/<script|<[^>]+\son\w+=|href="javascript:/i);
    expect(message).toContain('&lt;script&gt;');
  });

  it('serves exactly the contract fields of a post, with its owner as {name, avatar}', async () => {
    const res = await get('/api/post?q=hiring');
    expect(res.body.data).toHaveLength(1);
    const p = res.body.data[0]!;
    expect(Object.keys(p)).toEqual(['id', 'title', 'message', 'url', 'image', 'user', 'created_at', 'updated_at']);
    expect(p).toMatchObject({
      id: ids.p1,
      title: 'Hiring a Go engineer',
      url: 'https://jobs.example/1',
      image: null,
      user: { name: 'Alice Anderson', avatar: 'https://example.com/a.png' },
    });
    expect(p.message).toContain('<em>Paid</em>');
    expect(p.message).toContain('<li>Go</li>');
    expect(JSON.stringify(res.body)).not.toMatch(/email|token|user_id|_id"/);
  });

  it('first, middle, last and past-the-end pages follow Laravel, keeping q and limit in links', async () => {
    const total = FILLERS + 3;
    const P = `http://${HOST}/api/user`;
    const first = await get('/api/user?limit=10');
    expect(first.body.meta).toMatchObject({ current_page: 1, from: 1, to: 10, last_page: 3, per_page: 10, total, path: P });
    expect(first.body.links).toEqual({
      first: `${P}?limit=10&page=1`,
      last: `${P}?limit=10&page=3`,
      prev: null,
      next: `${P}?limit=10&page=2`,
    });

    const middle = await get('/api/user?page=2&limit=10');
    expect(middle.body.meta).toMatchObject({ current_page: 2, from: 11, to: 20 });
    expect(middle.body.links).toMatchObject({ prev: `${P}?limit=10&page=1`, next: `${P}?limit=10&page=3` });

    const last = await get('/api/user?limit=10&page=3');
    expect(last.body.data).toHaveLength(5);
    expect(last.body.meta).toMatchObject({ current_page: 3, from: 21, to: 25 });
    expect(last.body.links.next).toBeNull();

    const beyond = await get('/api/user?limit=10&page=7');
    expect(beyond.status).toBe(200);
    expect(beyond.body.data).toEqual([]);
    expect(beyond.body.meta).toMatchObject({ current_page: 7, from: null, to: null, last_page: 3, total });
    expect(beyond.body.links).toMatchObject({ prev: `${P}?limit=10&page=6`, next: null });

    const searched = await get('/api/user?q=filler%20text&limit=5&page=2');
    expect(searched.body.meta).toMatchObject({ total: FILLERS, last_page: 5, from: 6, to: 10 });
    expect(searched.body.links.next).toBe(`${P}?q=filler%20text&limit=5&page=3`);
    expect(searched.body.meta.path).toBe(P);
  });

  it('orders newest first with a stable _id tie-break', async () => {
    expect(await userModel(t.ctx.mongo).countDocuments({ created_at: new Date('2026-01-01T00:00:00Z') })).toBe(FILLERS);
    const res = await get('/api/user?limit=100');
    const docs = await userModel(t.ctx.mongo).find().sort({ created_at: -1, _id: -1 }).select('_id').lean();
    expect(res.body.data.map((u) => u.id)).toEqual(docs.map((d) => d._id.toString()));
  });

  it.each([
    ['/api/user', FILLERS + 3],
    ['/api/user?q=filler', FILLERS],
    ['/api/post', 12],
    ['/api/post?q=body', 10],
  ])('a client paging %s from first to last sees every record exactly once', async (path, expected) => {
    const sep = path.includes('?') ? '&' : '?';
    const { ids: seen, total } = await walk(`${path}${sep}limit=3`);
    expect(total).toBe(expected);
    expect(seen).toHaveLength(expected);
    expect(new Set(seen).size).toBe(expected);
  });

  it.each([
    ['alice', ['alice']],
    ['ALICE anderson', ['alice']],
    ['ａｌｉｃｅ', ['alice']],
    ['types', ['alice']],
    ['node.js', ['alice']],
    ['alice.*', ['alice']],
    ['alice designer', []],
    ['東京', ['alice']],
    ['京都', ['alice', 'sato']],
    ['ラーメン', ['alice']],
    ['翔', ['sato']],
    ['デザイナー 京都', ['sato']],
  ])('search q=%j finds %j', async (q, who) => {
    const res = await get(`/api/user?q=${encodeURIComponent(q)}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((u) => u.id).sort()).toEqual(who.map((w) => ids[w]).sort());
  });

  it('takes regular-expression characters literally: they match nothing, not everything', async () => {
    const res = await get(`/api/user?q=${encodeURIComponent('.*[](){}+?^$|\\')}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect(res.body.meta.total).toBe(0);
    const mixed = await get(`/api/post?q=${encodeURIComponent('(go|.*) engineer$')}`);
    expect(mixed.body.data.map((p) => p.id)).toEqual([ids.p1]);
  });

  it('searches posts by title and message, not by the owner', async () => {
    expect((await get('/api/post?q=東京')).body.data.map((p) => p.id)).toEqual([ids.p2]);
    expect((await get('/api/post?q=grpc')).body.data.map((p) => p.id)).toEqual([ids.p1]);
    expect((await get('/api/post?q=anderson')).body.data).toEqual([]);
  });

  it('search runs on an index that exists', async () => {
    const indexes = [...(await userModel(t.ctx.mongo).listIndexes()), ...(await postModel(t.ctx.mongo).listIndexes())];
    expect(indexes.filter((i) => Object.keys(i.key as object)[0] === 'search_keys')).toHaveLength(2);
  });
});

describe('public directory link base', () => {
  it('uses APP_URL when set, whatever the Host header says', async () => {
    const config = { ...t.ctx.config, http: { ...t.ctx.config.http, appUrl: 'https://dir.example.org/base' } };
    const app = supertest(buildApp({ ...t.ctx, config }, apiRoutes));
    const res = await app.get('/api/post/?limit=5').set('Host', 'evil.example');
    expect(res.body.meta.path).toBe('https://dir.example.org/base/api/post');
    expect(res.body.links.first).toBe('https://dir.example.org/base/api/post?limit=5&page=1');
  });
});

describe('public directory parameters', () => {
  it.each([
    ['limit=0', 'limit', 'The limit field must be at least 1.'],
    ['limit=101', 'limit', 'The limit field must not be greater than 100.'],
    ['limit=-1', 'limit', 'The limit field must be at least 1.'],
    ['limit=1.5', 'limit', 'The limit field must be an integer.'],
    ['limit=abc', 'limit', 'The limit field must be an integer.'],
    ['limit=5&limit=6', 'limit', 'The limit field must be an integer.'],
    ['page=0', 'page', 'The page field must be at least 1.'],
    ['page=-1', 'page', 'The page field must be at least 1.'],
    ['page=1.5', 'page', 'The page field must be an integer.'],
    ['page=abc', 'page', 'The page field must be an integer.'],
    ['page=1&page=2', 'page', 'The page field must be an integer.'],
    [`q=${'x'.repeat(201)}`, 'q', 'The q field must not be greater than 200 characters.'],
    ['q=a&q=b', 'q', 'The q field must be a string.'],
  ])('?%s answers 422 on %s', async (query, field, message) => {
    for (const path of ['/api/user', '/api/post']) {
      const res = await get(`${path}?${query}`);
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message, errors: { [field]: [message] } });
      expect(res.headers['access-control-allow-origin']).toBe('*');
    }
  });

  it('accepts q of exactly 200 characters, counted as characters', async () => {
    expect((await get(`/api/user?q=${encodeURIComponent('東'.repeat(200))}`)).status).toBe(200);
  });

  it('reports every bad field at once', async () => {
    const res = await get('/api/user?page=0&limit=abc');
    expect(res.status).toBe(422);
    expect(Object.keys(res.body.errors!).sort()).toEqual(['limit', 'page']);
    expect(res.body.message).toMatch(/\(and 1 more error\)$/);
  });

  it('keeps bracketed parameters literal: out of the query and out of the links', async () => {
    const res = await get('/api/user?q[$ne]=x&limit=2');
    expect(res.status).toBe(200);
    expect(res.body.links.first).toBe(`http://${HOST}/api/user?limit=2&page=1`);
  });
});

describe('public directory CORS and methods', () => {
  it('answers a preflight with 204, the methods and the headers', async () => {
    const res = await t.http
      .options('/api/post')
      .set('Origin', 'https://client.example')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'X-Requested-With');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe('GET, HEAD, OPTIONS');
    expect(res.headers['access-control-allow-headers']).toContain('X-Requested-With');
    expect(res.text).toBe('');
  });

  it('lets any origin read the lists and the rate-limit headers', async () => {
    const res = await t.http.get('/api/user').set('Origin', 'https://client.example');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toContain('X-RateLimit-Remaining');
  });

  it('does not open CORS on other routes', async () => {
    const res = await t.http.get('/version').set('Origin', 'https://client.example');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('answers other methods with 405 and Allow', async () => {
    const res = await t.http.post('/api/user').send({});
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.body.message).toMatch(/^The POST method is not supported for route api\/user\./);
  });
});

describe('public directory kept pages', () => {
  const mongoCommands = async (): Promise<number> => (await t.ctx.metrics.mongoCommands.get()).values.reduce((sum, v) => sum + v.value, 0);

  it('sends a page again byte for byte without asking MongoDB, with its ETag, and a 304 for a match', async () => {
    const first = await t.http.get('/api/user?limit=3').set('Host', HOST);
    const before = await mongoCommands();
    const again = await t.http.get('/api/user?limit=3').set('Host', HOST);
    expect(await mongoCommands()).toBe(before);
    expect(again.text).toBe(first.text);
    expect(again.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(again.headers.etag).toMatch(/^W\/"/);
    const conditional = await t.http.get('/api/user?limit=3').set('Host', HOST).set('If-None-Match', first.headers.etag!);
    expect(conditional.status).toBe(304);
    expect(conditional.text).toBe('');
    // Another request (a link written otherwise) is a page of its own.
    const other = await t.http.get('/api/user?limit=3&page=1').set('Host', HOST);
    expect(JSON.parse(other.text).links.first).toBe(JSON.parse(first.text).links.first);
  });

  it('shows a write of this process at once, and of another process as soon as its notice arrives', async () => {
    const listed = async (q: string) => ((await get(`/api/user?q=${q}`)).body.data ?? []).map((u) => u.name);
    expect(await listed('Zelda')).toEqual([]);
    await t.ctx.users.create({ name: 'Zelda Here', email: 'zelda@example.com' });
    expect(await listed('Zelda')).toEqual(['Zelda Here']);

    expect(await listed('Yorick')).toEqual([]);
    const cli = await runCli(
      ['users:create', '--name', 'Yorick There', '--email', 'yorick@example.com'],
      testEnv({ MONGODB_URI: mongoUriFor(t.ctx.mongo.name), REDIS_PREFIX: t.ctx.redisPrefix }),
    );
    expect(cli.code, cli.stderr).toBe(0);
    // Kept for DIRECTORY_CACHE_TTL (5 min) were nobody told: seen within seconds, it was told.
    await until('the other process is seen', async () => (await listed('Yorick')).length === 1, 5_000, 50);
  });

  it('keeps its pages through writes that change nothing they show, and drops those that show what changed', async () => {
    const users = await get('/api/user?limit=3');
    const posts = await get('/api/post?limit=3');
    const second = await get('/api/user?limit=3&page=2');
    const rotated = (second.body.data as { id: string }[])[0]!.id;
    const owners = await postModel(t.ctx.mongo)
      .find({ _id: mongoose.trusted({ $in: (posts.body.data as { id: string }[]).map((p) => p.id) }) })
      .select('user_id')
      .lean();
    expect(owners.map((o) => o.user_id.toHexString())).not.toContain(rotated);
    // A rotated token changes the account's updated_at only: pages not showing it are sent as kept.
    await t.ctx.users.rotateToken(rotated);
    const before = await mongoCommands();
    expect((await get('/api/user?limit=3')).body).toEqual(users.body);
    expect((await get('/api/post?limit=3')).body).toEqual(posts.body);
    expect(await mongoCommands()).toBe(before);
    // The page showing it is made again (its updated_at may read the same to the second).
    await get('/api/user?limit=3&page=2');
    expect(await mongoCommands()).toBeGreaterThan(before);
  });

  it('keeps nothing with DIRECTORY_CACHE_TTL=0', async () => {
    const u = await createTestContext({ DIRECTORY_CACHE_TTL: '0' });
    try {
      await u.http.get('/api/post');
      const count = async () => (await u.ctx.metrics.mongoCommands.get()).values.reduce((sum, v) => sum + v.value, 0);
      const before = await count();
      await u.http.get('/api/post');
      expect(await count()).toBeGreaterThan(before);
    } finally {
      await u.close();
    }
  });
});
