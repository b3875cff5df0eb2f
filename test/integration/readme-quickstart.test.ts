import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, exitOf, spawnCli, waitForLog } from '../helpers/cli.js';
import { cliDatabase, uniqueName } from '../helpers/context.js';
import { until } from '../helpers/until.js';
import { dropKeys } from '../helpers/redis-keys.js';

/**
 * README.md's "Quick start" run as written against a real `shelfwatch all`, so the section cannot
 * drift from the product. The convention it follows is stated in an HTML comment in the section.
 */

const ANY = '…';
const EVENTUALLY_MS = 20_000;
const STEP_MS = 40_000;

interface Step {
  readonly script: string;
  /** The parsed ```json block after the script; undefined: the script must print nothing. */
  readonly expected?: unknown;
  readonly eventually: boolean;
}

function quickStartSteps(readme: string): Step[] {
  const start = readme.indexOf('\n## Quick start\n');
  if (start < 0) throw new Error('README.md has no "## Quick start" section');
  const end = readme.indexOf('\n## ', start + 1);
  // The convention comment itself quotes fences; only what a reader sees counts.
  const section = readme.slice(start, end < 0 ? undefined : end).replace(/<!--[\s\S]*?-->/g, '');
  const steps: Step[] = [];
  for (const m of section.matchAll(/^```([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm)) {
    const [lang = '', ...flags] = m[1]!.trim().split(/\s+/);
    const body = m[2]!;
    const prev = steps.at(-1);
    if (lang === 'sh') {
      steps.push({ script: body, eventually: false });
    } else if (lang === 'json') {
      if (!prev || prev.expected !== undefined) throw new Error(`a json block without its sh block before it:\n${body}`);
      if (flags.some((f) => f !== 'eventually')) throw new Error(`unknown json block flags: ${flags.join(' ')}`);
      steps[steps.length - 1] = { script: prev.script, expected: JSON.parse(body), eventually: flags.includes('eventually') };
    } else {
      throw new Error(`a \`\`\`${lang} block in the quick start: only sh and json blocks are allowed, and both are run`);
    }
  }
  return steps;
}

const show = (v: unknown): string => JSON.stringify(v);

/** Where `actual` departs from the README's answer (the convention above), or undefined. */
function mismatch(expected: unknown, actual: unknown, at = '$'): string | undefined {
  if (typeof expected === 'string' && expected.endsWith(ANY)) {
    const prefix = expected.slice(0, -ANY.length);
    return typeof actual === 'string' && actual.startsWith(prefix)
      ? undefined
      : `${at}: expected a string starting with ${show(prefix)}, got ${show(actual)}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${at}: expected an array, got ${show(actual)}`;
    const open = expected.at(-1) === ANY;
    const items = open ? expected.slice(0, -1) : expected;
    if (open ? actual.length < items.length : actual.length !== items.length) {
      return `${at}: expected ${open ? 'at least ' : ''}${items.length} elements, got ${actual.length}: ${show(actual)}`;
    }
    for (const [i, item] of items.entries()) {
      const m = mismatch(item, actual[i], `${at}[${i}]`);
      if (m) return m;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return `${at}: expected an object, got ${show(actual)}`;
    const { [ANY]: rest, ...members } = expected as Record<string, unknown>;
    if (rest !== undefined && rest !== ANY) return `${at}: the README's "${ANY}" member must be "${ANY}"`;
    const got = actual as Record<string, unknown>;
    for (const [key, value] of Object.entries(members)) {
      if (!(key in got)) return `${at}.${key}: missing`;
      const m = mismatch(value, got[key], `${at}.${key}`);
      if (m) return m;
    }
    const extra = Object.keys(got).filter((k) => !(k in members));
    return rest === undefined && extra.length ? `${at}: members the README does not show: ${extra.join(', ')}` : undefined;
  }
  return Object.is(expected, actual) ? undefined : `${at}: expected ${show(expected)}, got ${show(actual)}`;
}

/**
 * One bash process fed block after block, as a terminal is: variables set by one block are there
 * for the next. Each block's stdin is /dev/null so a command cannot swallow the blocks after it.
 */
class BashSession {
  readonly #child: ChildProcess;
  #stdout = '';
  #stderr = '';

  constructor(env: Record<string, string>) {
    this.#child = spawn('bash', ['--noprofile', '--norc'], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child.stdout!.on('data', (d: Buffer) => (this.#stdout += d.toString()));
    this.#child.stderr!.on('data', (d: Buffer) => (this.#stderr += d.toString()));
  }

  run(script: string, timeoutMs = STEP_MS): Promise<{ code: number; stdout: string; stderr: string }> {
    const marker = `__quickstart_${randomUUID()}__`;
    this.#stdout = '';
    this.#stderr = '';
    this.#child.stdin!.write(`{\n${script}\n} </dev/null\nprintf '\\n${marker} %s\\n' "$?"\n`);
    const done = new RegExp(`\\n?${marker} (\\d+)\\n`);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms; stderr:\n${this.#stderr}`)), timeoutMs);
      const onData = (): void => {
        const m = done.exec(this.#stdout);
        if (m) finish(undefined, { code: Number(m[1]), stdout: this.#stdout.slice(0, m.index), stderr: this.#stderr });
      };
      const onExit = (): void => finish(new Error(`bash exited; stderr:\n${this.#stderr}`));
      const finish = (err?: Error, result?: { code: number; stdout: string; stderr: string }): void => {
        clearTimeout(timer);
        this.#child.stdout!.off('data', onData);
        this.#child.off('exit', onExit);
        if (err) reject(err);
        else resolve(result!);
      };
      this.#child.stdout!.on('data', onData);
      this.#child.once('exit', onExit);
    });
  }

  async close(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    this.#child.stdin!.end('exit\n');
    await exitOf(this.#child);
  }
}

const steps = quickStartSteps(readFileSync(join(ROOT, 'README.md'), 'utf8'));
const db = cliDatabase('sw_quickstart');
const redisPrefix = uniqueName('swt');
let daemon: ChildProcess | undefined;
let session: BashSession;

beforeAll(async () => {
  const boardPassword = randomBytes(15).toString('base64url');
  // The test's MongoDB and Redis are configured, so this is not the embedded mode: no greeting,
  // no demo account. What the greeting would show the reader (port, board password) the session
  // gets from the test instead; the section creates its own account.
  // Started as the section tells the reader to start it: alerts may go to a receiver on this machine.
  const env = {
    ...db.env,
    PORT: '0',
    REDIS_PREFIX: redisPrefix,
    BULL_BOARD_USER: 'admin',
    BULL_BOARD_PASSWORD: boardPassword,
    ENDPOINT_ALLOW_PRIVATE: 'true',
  };
  daemon = spawnCli(['all'], env);
  // Nothing reads its stdout: keep the pipe drained so a write can never block the daemon.
  daemon.stdout!.resume();
  const listening = await waitForLog(daemon, (l) => l.msg === 'api listening', 25_000);
  const { MONGODB_URI, REDIS_URL, APP_KEY, NODE_ENV } = db.env;
  session = new BashSession({
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    MONGODB_URI: MONGODB_URI!,
    REDIS_URL: REDIS_URL!,
    REDIS_PREFIX: redisPrefix,
    APP_KEY: APP_KEY!,
    NODE_ENV: NODE_ENV!,
    PORT: new URL(String(listening.url)).port,
    BOARD_PASSWORD: boardPassword,
  });
}, 30_000);

afterAll(async () => {
  await session?.close();
  if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
    const exited = exitOf(daemon);
    daemon.kill('SIGTERM');
    const killer = setTimeout(() => daemon?.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(killer);
  }
  await db.close();
  const redis = new Redis(db.env.REDIS_URL!, { maxRetriesPerRequest: 1 });
  try {
    await dropKeys(redis, redisPrefix);
  } finally {
    redis.disconnect();
  }
}, 30_000);

describe('README quick start', () => {
  it('has the steps a newcomer needs, each of them checked', () => {
    const all = steps.map((s) => s.script).join('\n');
    for (const part of [
      'users:create',
      '/api/watch/asin',
      '/api/watch/ean',
      '/api/world',
      '/api/world/update',
      '/api/alerts',
      '/app/',
      '/admin/queues',
    ])
      expect(all).toContain(part);
    expect(steps.filter((s) => s.expected !== undefined).length).toBeGreaterThanOrEqual(6);
  });

  for (const [i, step] of steps.entries()) {
    it(`step ${i + 1}: ${step.script.split('\n')[0]}`, async () => {
      const attempt = async (): Promise<true> => {
        const { code, stdout, stderr } = await session.run(step.script);
        if (code !== 0) throw new Error(`exit code ${code}; stdout:\n${stdout}\nstderr:\n${stderr}`);
        if (step.expected === undefined) {
          if (stdout.trim() !== '') throw new Error(`printed what the README does not show:\n${stdout}`);
          return true;
        }
        let actual: unknown;
        try {
          actual = JSON.parse(stdout);
        } catch {
          throw new Error(`not JSON:\n${stdout}\nstderr:\n${stderr}`);
        }
        const diff = mismatch(step.expected, actual);
        if (diff) throw new Error(`the answer differs from README.md: ${diff}\nanswer: ${stdout}`);
        return true;
      };
      if (step.eventually) await until(`step ${i + 1} answering as README.md shows`, attempt, EVENTUALLY_MS, 250);
      else await attempt();
    });
  }
});
