import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { EmbeddedUnavailableError } from '../errors/index.js';

export interface EmbeddedRedis {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * A private redis-server child for the embedded default: loopback only, no persistence, noeviction
 * (BullMQ needs it), in a temporary directory removed on stop.
 */
export async function startEmbeddedRedis(binary = 'redis-server'): Promise<EmbeddedRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'shelfwatch-redis-'));
  const args = [
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

  await new Promise<void>((resolve, reject) => {
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
      const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
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
  child.removeAllListeners('exit');

  return {
    url: `redis://127.0.0.1:${port}`,
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
