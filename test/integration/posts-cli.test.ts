import { afterAll, describe, expect, it } from 'vitest';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mongoose from 'mongoose';
import { runCli } from '../helpers/cli.js';
import { cliDatabase } from '../helpers/context.js';
import { fakePost, fakeUser } from '../../src/seed/fake.js';

// The CLI runs as a child process on a database of this file's own.
const db = cliDatabase('sw_posts');
const { env, conn } = db;
afterAll(() => db.close());

describe('posts:create', () => {
  it('creates a post owned by the user, renders and sanitises its Markdown, prints {"id"}', async () => {
    expect((await runCli(['users:create', '--name', 'Owner', '--email', 'owner@example.com'], env)).code).toBe(0);
    const file = join(await mkdtemp(join(tmpdir(), 'sw-post-')), 'msg.md');
    await writeFile(file, '*Remote* job\n\n<script>alert(1)</script> [apply](https://example.com/apply)');
    const res = await runCli(
      ['posts:create', '--email', 'OWNER@example.com', '--title', 'Go <dev>', '--url', 'https://example.com/j', '--message-file', file],
      env,
    );
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout) as { id: string };
    expect(Object.keys(out)).toEqual(['id']);

    const post = await conn.collection('posts').findOne({ _id: new mongoose.Types.ObjectId(out.id) });
    const owner = await conn.collection('users').findOne({ email: 'owner@example.com' });
    expect(post?.user_id).toEqual(owner?._id);
    expect(post?.title).toBe('Go <dev>');
    expect(post?.url).toBe('https://example.com/j');
    expect(post?.message_html).toBe(
      '<p><em>Remote</em> job</p>\n<p>&lt;script&gt;alert(1)&lt;/script&gt; <a href="https://example.com/apply" rel="nofollow noopener">apply</a></p>',
    );
    expect(post?.search_keys).toEqual(expect.arrayContaining(['w:go', 'w:dev', 'w:remote', 'w:job']));
  });

  it.each([
    [['posts:create', '--email', 'nobody@example.com', '--title', 'T'], 1, /no user with email/],
    [['posts:create', '--email', 'owner@example.com'], 2, /--title is required/],
    [
      ['posts:create', '--email', 'owner@example.com', '--title', 'T', '--url', 'javascript:alert(1)'],
      2,
      /--url: must be an http\(s\) URL/,
    ],
  ])('%j exits %i', async (args, code, message) => {
    const res = await runCli(args, env);
    expect(res.code).toBe(code);
    expect(res.stderr).toMatch(message);
    expect(res.stdout).toBe('');
  });
});

describe('seed', () => {
  it('is deterministic and idempotent, with English and Japanese Markdown content', async () => {
    const first = await runCli(['seed', '--users', '6', '--posts', '9'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ users: { inserted: 6, updated: 0 }, posts: { inserted: 9, updated: 0 } });
    const snapshot = async (): Promise<unknown[]> => [
      ...(await conn
        .collection('users')
        .find({ email: /^seed-user-/ })
        .sort({ email: 1 })
        .toArray()),
      ...(await conn
        .collection('posts')
        .find({ seed_key: /^seed-post-/ })
        .sort({ seed_key: 1 })
        .toArray()),
    ];
    const before = await snapshot();

    const again = await runCli(['seed', '--users', '6', '--posts', '9'], env);
    expect(JSON.parse(again.stdout)).toEqual({ users: { inserted: 0, updated: 6 }, posts: { inserted: 0, updated: 9 } });
    expect(await snapshot()).toEqual(before);

    const users = await conn
      .collection('users')
      .find({ email: /^seed-user-/ })
      .toArray();
    expect(users.map((u) => u.name).sort()).toEqual(Array.from({ length: 6 }, (_, i) => fakeUser(i).name).sort());
    expect(users.every((u) => typeof u.token_hash === 'string' && u.search_keys.length > 0)).toBe(true);
    const posts = await conn
      .collection('posts')
      .find({ seed_key: /^seed-post-/ })
      .toArray();
    const html = posts.map((p) => p.message_html as string).join('\n');
    expect(html).toMatch(/<(ul|ol)>/);
    expect(html).toContain('rel="nofollow noopener"');
    expect(html).toMatch(/<em>|<strong>/);
    const ownerIds = new Set(users.map((u) => String(u._id)));
    expect(posts.every((p) => ownerIds.has(String(p.user_id)))).toBe(true);
  });

  it('generates both languages', () => {
    const texts = Array.from({ length: 20 }, (_, i) => fakePost(i, 5).title + fakeUser(i).message);
    expect(texts.some((s) => /[\u3040-\u30ff\u4e00-\u9fff]/.test(s))).toBe(true);
    expect(texts.some((s) => /^[\x20-\x7e\n]+$/.test(s))).toBe(true);
    expect(fakeUser(3)).toEqual(fakeUser(3));
  });

  it('refuses bad counts', async () => {
    for (const args of [
      ['seed', '--users', '-1'],
      ['seed', '--users', 'x'],
      ['seed', '--posts', '3'],
    ]) {
      const res = await runCli(args, env);
      expect(res.code).toBe(2);
    }
  });
});
