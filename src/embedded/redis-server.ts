import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { EmbeddedUnavailableError } from '../core/errors.js';

export interface EmbeddedRedis {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * A private redis-server child for the embedded default: loopback only, no persistence, noeviction
 * (BullMQ needs it), in a temporary directory removed on stop. Loopback is open to every user of the
 * machine, so it asks for a password made for this run; the URL carries it. The password goes in a
 * config file in the private (0700) temporary directory, not on the command line, which any local
 * user can read in the process list.
 */
export async function startEmbeddedRedis(binary = 'redis-server'): Promise<EmbeddedRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'shelfwatch-redis-'));
  const password = randomBytes(24).toString('base64url');
  const configFile = join(dir, 'redis.conf');
  await writeFile(configFile, `requirepass ${password}\n`, { mode: 0o600, flag: 'wx' });
  const args = [
    configFile,
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--maxmemory-policy',
    'noeviction',
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
  ];
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (b: Buffer): void => {
    output = (output + b.toString()).slice(-4000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  const ready = new Promise<void>((resolve, reject) => {
    const fail = (why: string): void =>
      reject(
        new EmbeddedUnavailableError(
          `could not start the embedded Redis (${why}); install redis-server or set REDIS_URL to a Redis you run`,
        ),
      );
    child.once('error', (err: NodeJS.ErrnoException) => fail(err.code === 'ENOENT' ? `${binary} not found` : err.message));
    child.once('exit', (code) => fail(`${binary} exited with code ${code}: ${output.trim().split('\n').pop() ?? ''}`));
    const started = Date.now();
    const poll = async (): Promise<void> => {
      const { Redis } = await import('ioredis');
      const probe = new Redis({ port, host: '127.0.0.1', password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        await probe.ping();
        resolve();
      } catch {
        if (Date.now() - started > 10_000) fail('it did not answer within 10 s');
        else setTimeout(() => void poll(), 50);
      } finally {
        probe.disconnect();
      }
    };
    child.once('spawn', () => void poll());
  });
  try {
    await ready;
  } catch (err) {
    // Leave no server and no password file behind.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  child.removeAllListeners('exit');

  return {
    url: `redis://:${password}@127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
