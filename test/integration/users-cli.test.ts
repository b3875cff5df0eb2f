import { afterAll, describe, expect, it } from 'vitest';
import { writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../helpers/cli.js';
import { cliDatabase } from '../helpers/context.js';
import { hashToken } from '../../src/users/token.js';

// The CLI runs as a child process on a database of this file's own.
const db = cliDatabase('sw_cli');
const { env, conn } = db;
afterAll(() => db.close());

async function stored(email: string): Promise<Record<string, unknown> | null> {
  return conn.collection('users').findOne({ email });
}

describe('users:create and users:token', () => {
  it('creates a user and prints one JSON line with id and token; the token round-trips', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sw-cli-'));
    const file = join(dir, 'msg.md');
    await writeFile(file, 'Hello **world** <script>x</script>');
    const res = await runCli(
      [
        'users:create',
        '--name',
        'Alice',
        '--email',
        'Alice@Example.com',
        '--title',
        'Buyer',
        '--tags',
        'a, b',
        '--url',
        'https://example.com',
        '--message-file',
        file,
      ],
      env,
    );
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const out = JSON.parse(lines[0]!) as { id: string; token: string };
    expect(Object.keys(out).sort()).toEqual(['id', 'token']);
    expect(out.token).toMatch(/^[A-Za-z0-9]{60}$/);

    const doc = await stored('alice@example.com');
    expect(String(doc?._id)).toBe(out.id);
    expect(doc?.token_hash).toBe(hashToken(out.token));
    expect(JSON.stringify(doc)).not.toContain(out.token);
    expect(doc?.tags).toEqual(['a', 'b']);
    expect(doc?.message_html).toBe('<p>Hello <strong>world</strong> &lt;script&gt;x&lt;/script&gt;</p>');

    const shown = await runCli(['users:token', '--email', 'alice@example.com'], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout.trim()).toBe(out.token);

    const rotated = await runCli(['users:token', '--email', 'alice@example.com', '--rotate'], env);
    expect(rotated.code).toBe(0);
    const fresh = rotated.stdout.trim();
    expect(fresh).toMatch(/^[A-Za-z0-9]{60}$/);
    expect(fresh).not.toBe(out.token);
    const after = await stored('alice@example.com');
    expect(after?.token_hash).toBe(hashToken(fresh));
    expect(await conn.collection('users').countDocuments({ token_hash: hashToken(out.token) })).toBe(0);
    expect((await runCli(['users:token', '--email', 'alice@example.com'], env)).stdout.trim()).toBe(fresh);
  });

  it('refuses a second user with the same email', async () => {
    const first = await runCli(['users:create', '--name', 'Bob', '--email', 'bob@example.com'], env);
    expect(first.code).toBe(0);
    const again = await runCli(['users:create', '--name', 'Bob 2', '--email', 'BOB@example.com'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exists/);
    expect(await conn.collection('users').countDocuments({ email: 'bob@example.com' })).toBe(1);
  });

  it.each([
    [['no-such-command'], /unknown command/],
    [['users:create', '--name', 'X'], /--email is required/],
    [['users:create', '--name', 'X', '--email', 'x@y.z', '--bogus'], /Unknown option '--bogus'/],
    [['users:create', '--name', 'X', '--email', 'not-an-email'], /--email: must be an email address/],
    [['users:token'], /--email is required/],
  ])('%j: usage on stderr, exit code 2', async (args, message) => {
    const res = await runCli(args, env);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(message);
    expect(res.stderr).toContain('usage: shelfwatch');
    expect(res.stdout).toBe('');
  });

  it('stops with one line naming a bad variable, exit code 78', async () => {
    const res = await runCli(['api'], { ...env, PORT: 'eighty' });
    expect(res.code).toBe(78);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(/PORT/);
  });

  it('users:token for an unknown email fails with exit code 1', async () => {
    const res = await runCli(['users:token', '--email', 'nobody@example.com'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/no user/);
  });
});
