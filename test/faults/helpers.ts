import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { freePort } from '../../src/embedded/free-port.js';
import type { Metrics } from '../../src/core/metrics.js';
import { startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { until } from '../helpers/until.js';

/** Test-side helpers for fault injection: real processes and real sockets, nothing mocked. */

export { asins } from '../helpers/pipeline.js';
export { until } from '../helpers/until.js';

/** One value of a Prometheus text exposition, e.g. metric(text, 'shelfwatch_country_stopped', { country: 'JP' }). */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

/**
 * A TCP proxy between the app and a server (the shared MongoDB stand-in): `cut()` resets every open
 * connection and refuses new ones, as a stopped server's host would, without losing the server's
 * data; `restore()` lets connections through again. A reset rather than a close (FIN): with a close,
 * the MongoDB driver (7.8) at times writes its monitor's hello on the connection closing at that
 * moment and waits for the write's 'drain' for ever, so the server stays unselectable; that is the
 * driver's race, not ours to test.
 */
export interface TcpProxy {
  readonly port: number;
  cut(): void;
  /**
   * Black-holes the traffic: connections stay open (and new ones are accepted) but nothing is
   * forwarded either way until `restore()`, as when a network drops packets without a reset.
   */
  stall(): void;
  restore(): void;
  close(): Promise<void>;
  /** Connections refused while cut. */
  readonly refused: number;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  let cut = false;
  let stalled = false;
  const hold = ([a, b]: [net.Socket, net.Socket]): void => {
    a.unpipe(b);
    b.unpipe(a);
    a.pause();
    b.pause();
  };
  const flow = ([a, b]: [net.Socket, net.Socket]): void => {
    a.pipe(b);
    b.pipe(a);
  };
  let refused = 0;
  const server = net.createServer((client) => {
    if (cut) {
      refused++;
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    open.add(client);
    open.add(upstream);
    pairs.add(pair);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
      pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    if (stalled) hold(pair);
    else flow(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    get refused() {
      return refused;
    },
    cut() {
      cut = true;
      for (const s of open) s.resetAndDestroy();
      open.clear();
    },
    stall() {
      stalled = true;
      for (const pair of pairs) hold(pair);
    },
    restore() {
      cut = false;
      if (stalled) {
        stalled = false;
        for (const pair of pairs) flow(pair);
      }
    },
    close() {
      for (const s of open) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A redis-server of the test's own on a fixed port, so that it can be killed and started again at
 * the same address (the shared Redis on 6379 is never touched). With `appendonly` it keeps its data
 * across a crash as production must (appendonly yes, fsync always here so the test is exact).
 */
export interface PrivateRedis {
  readonly url: string;
  /** SIGKILL: a crash, no chance to save anything more. */
  crash(): Promise<void>;
  start(): Promise<void>;
  client(): Redis;
  stop(): Promise<void>;
}

export async function startPrivateRedis(opts: { appendonly: boolean }): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'shelfwatch-fault-redis-'));
  let child: ChildProcess | undefined;
  const clients: Redis[] = [];
  const start = async (): Promise<void> => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--dir',
        dir,
        '--appendonly',
        opts.appendonly ? 'yes' : 'no',
        '--appendfsync',
        'always',
        '--maxmemory-policy',
        'noeviction',
        '--loglevel',
        'warning',
      ],
      { stdio: 'ignore' },
    );
    await until(
      'private redis-server answering',
      async () => {
        const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        probe.on('error', () => undefined);
        try {
          await probe.connect();
          // While the AOF loads, PING answers LOADING: wait for a real answer.
          return (await probe.ping()) === 'PONG';
        } finally {
          probe.disconnect();
        }
      },
      10_000,
      50,
    );
  };
  const crash = async (): Promise<void> => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    crash,
    start,
    client() {
      const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    },
    async stop() {
      for (const c of clients) c.disconnect();
      await crash();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** host and port of a mongodb:// URI (the shared test server), and the same URI through a proxy. */
export function mongoThrough(uri: string, proxyPort: number): { host: string; port: number; proxied: string } {
  const u = new URL(uri);
  const host = u.hostname;
  const port = Number(u.port || 27017);
  u.host = `127.0.0.1:${proxyPort}`;
  return { host, port, proxied: u.toString() };
}

/** The pipeline with its MongoDB reached through a TCP proxy that the test can cut or stall. */
export async function startPipelineBehindProxy(
  env: Record<string, string> = {},
): Promise<{ p: Pipeline; proxy: TcpProxy; close(): Promise<void> }> {
  const target = mongoThrough(inject('mongoUri'), 0);
  const proxy = await startTcpProxy(target.host, target.port);
  const p = await startPipeline({ ...env, MONGODB_URI: mongoThrough(inject('mongoUri'), proxy.port).proxied });
  return {
    p,
    proxy,
    async close() {
      proxy.restore();
      await p.close();
      await proxy.close();
    },
  };
}

/** Job attempts of every name and country that ended with `outcome`, from the jobs counter. */
export async function jobOutcomes(metrics: Metrics, outcome: string): Promise<number> {
  const m = await metrics.jobs.get();
  return m.values.filter((v) => v.labels.outcome === outcome).reduce((n, v) => n + v.value, 0);
}
