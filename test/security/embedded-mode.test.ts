import { chmod, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import { buildContext } from '../../src/app/context.js';
import { createLogger } from '../../src/logger.js';
import { startEmbeddedRedis, type EmbeddedRedis } from '../../src/embedded/redis-server.js';
import { writeEmbeddedState } from '../../src/embedded/state-file.js';
import { generateAppKey } from '../../config/app-key.js';
import { spawnCli } from '../helpers/cli.js';
import { cliDatabase, LogCapture, testEnv, uniqueName } from '../helpers/context.js';

/**
 * The embedded mode on a shared machine:
 * - its Redis asks for a password made for the run, which only the URL (and the 0600 state file) carries;
 * - its state file holds only what the run generated: never a secret that came from the environment;
 *   admin commands attach through it only while it is this user's alone;
 * - with NODE_ENV=production it does not start (or attach) unless EMBEDDED=true asks for it, so a
 *   deployment that lost MONGODB_URI stops with one line instead of serving from a memory-only database.
 */
let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'sw-embedded-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Runs the CLI; one that starts serving instead of refusing is stopped after `deadlineMs`. */
async function run(args: string[], env: Record<string, string>, deadlineMs = 30_000) {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), deadlineMs);
  // 'close', not 'exit': by then stdout and stderr have been read to the end.
  const code = await new Promise<number | null>((resolve) => child.once('close', (c: number | null) => resolve(c)));
  clearTimeout(timer);
  // Log lines are JSON; what the program says to the operator is plain text.
  const said = stderr.split('\n').filter((l) => l !== '' && !l.startsWith('{'));
  return { code, stdout, stderr, said };
}

describe('the embedded Redis', () => {
  let redis: EmbeddedRedis;
  beforeAll(async () => {
    redis = await startEmbeddedRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('refuses commands without the password that its URL carries', async () => {
    const url = new URL(redis.url);
    expect(url.password).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    const anonymous = new Redis({ host: url.hostname, port: Number(url.port), lazyConnect: true, maxRetriesPerRequest: 0 });
    anonymous.on('error', () => undefined);
    try {
      await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
    } finally {
      anonymous.disconnect();
    }
    const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
    }
  });

  it.skipIf(!existsSync('/proc/self/cmdline'))('keeps the password off every command line on the machine', async () => {
    const password = new URL(redis.url).password;
    expect(password.length).toBeGreaterThan(0);
    const seen: string[] = [];
    for (const pid of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.includes(password)) seen.push(pid);
    }
    expect(seen).toEqual([]);
  });

  it('gets a new password each run', async () => {
    const other = await startEmbeddedRedis();
    try {
      expect(new URL(other.url).password).not.toBe(new URL(redis.url).password);
    } finally {
      await other.stop();
    }
  });
});

describe('the state file of a run with MONGODB_URI and APP_KEY set and Redis embedded', () => {
  it('holds the generated Redis URL and nothing from the environment; no log line shows the password', async () => {
    const stateDir = join(root, 'state');
    const env = testEnv({ STATE_DIR: stateDir });
    delete env.REDIS_URL;
    const config = loadConfig(env);
    const logs = new LogCapture();
    const ctx = await buildContext(config, createLogger(config, logs), {
      embedded: 'start',
      ensureIndexes: false,
      dbName: uniqueName('sw_embedded'),
      defaultMetrics: false,
    });
    try {
      expect(ctx.embedded).toBe(true);
      const text = await readFile(join(stateDir, 'embedded.json'), 'utf8');
      const state = JSON.parse(text) as Record<string, unknown>;
      expect(Object.keys(state).sort()).toEqual(['pid', 'redisUrl']);
      expect(state.redisUrl).toBe(ctx.redisTarget.url);
      const password = new URL(ctx.redisTarget.url).password;
      expect(password).not.toBe('');
      expect(text).not.toContain(env.APP_KEY!.slice('base64:'.length));
      expect(text).not.toContain(env.MONGODB_URI!);
      expect(logs.text).not.toContain(password);
      expect(logs.text).toContain('embedded Redis started');
    } finally {
      await ctx.mongo.dropDatabase().catch(() => undefined);
      await ctx.resources.close();
    }
    expect(existsSync(join(stateDir, 'embedded.json'))).toBe(false);
  });
});

describe('NODE_ENV=production', () => {
  it('refuses `all` on embedded parts with one line naming MONGODB_URI, REDIS_URL and EMBEDDED=true', async () => {
    const res = await run(['all'], { NODE_ENV: 'production', PORT: '0', STATE_DIR: join(root, 'prod-all') });
    expect(res.code).toBe(78);
    expect(res.said).toHaveLength(1);
    expect(res.said[0]).toMatch(/^shelfwatch: configuration error: .*MONGODB_URI.*REDIS_URL.*EMBEDDED=true/);
    expect(res.stdout).toBe('');
    expect(existsSync(join(root, 'prod-all', 'embedded.json'))).toBe(false);
  });

  it('refuses `api` with only MONGODB_URI set (Redis would be embedded)', async () => {
    const env = testEnv({ NODE_ENV: 'production', PORT: '0', STATE_DIR: join(root, 'prod-api') });
    delete env.REDIS_URL;
    const res = await run(['api'], env);
    expect(res.code).toBe(78);
    expect(res.said).toEqual([expect.stringMatching(/REDIS_URL/)]);
  });

  it('refuses admin commands that would attach to an embedded run, unless EMBEDDED=true', async () => {
    const env = { NODE_ENV: 'production', STATE_DIR: join(root, 'prod-admin') };
    const refused = await run(['users:token', '--email', 'a@example.com'], env);
    expect(refused.code).toBe(78);
    expect(refused.said).toEqual([expect.stringMatching(/EMBEDDED=true/)]);
    // Asked for: it looks for a running embedded instance, finds none, and says so (69).
    const allowed = await run(['users:token', '--email', 'a@example.com'], { ...env, EMBEDDED: 'true' });
    expect(allowed.code).toBe(69);
    expect(allowed.said).toEqual([expect.stringMatching(/no database to use/)]);
  });

  it('runs as the image does: NODE_ENV=production with MONGODB_URI, REDIS_URL and APP_KEY', async () => {
    const res = await run(['users:token', '--email', 'nobody@example.com'], testEnv({ NODE_ENV: 'production' }));
    expect(res.code).toBe(1);
    expect(res.said).toEqual([expect.stringMatching(/nobody@example\.com|no user/i)]);
  });
});

describe('admin commands beside an embedded run', () => {
  const db = cliDatabase('sw_attach');
  afterAll(() => db.close());

  it('attach through a 0600 state file of this user, and ignore, with a warning, one that others can read', async () => {
    const dir = join(root, 'attach');
    // As a running `shelfwatch all` leaves it (this test process stands in for its pid).
    await writeEmbeddedState(dir, { pid: process.pid, mongoUri: db.env.MONGODB_URI, redisUrl: db.env.REDIS_URL, appKey: generateAppKey() });
    const env = { NODE_ENV: 'test', STATE_DIR: dir };
    const created = await run(['users:create', '--name', 'Ann', '--email', 'ann@example.com'], env);
    expect(created.said).toEqual([]);
    expect(created.code).toBe(0);

    await chmod(join(dir, 'embedded.json'), 0o644);
    const refused = await run(['users:token', '--email', 'ann@example.com'], env);
    expect(refused.code).toBe(69);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/not trusting the embedded state file: .*embedded\.json is readable by other users/);
  });
});
