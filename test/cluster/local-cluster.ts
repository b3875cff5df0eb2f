import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * A real Redis Cluster (3 masters, 3 replicas) on loopback, made of redis-server children, for tests
 * and benchmarks that must see MOVED redirects, failovers and cross-slot errors the way production does.
 * It talks to the servers through redis-cli, so it needs nothing but the two binaries.
 *
 * Cleanup when the parent dies: on Linux the servers are started through `setpriv --pdeathsig KILL`,
 * so the kernel kills them even when the parent is SIGKILLed. Where setpriv is missing, only a normal
 * exit of the parent kills them (an 'exit' handler); a parent killed by a signal leaves them running,
 * to be found with `pgrep -a redis-server`. Either way a parent that dies by a signal leaves the
 * directory behind. `detached` servers (cluster-cli.ts `up`) are meant to outlive the parent and get
 * neither.
 */
export interface LocalCluster {
  readonly nodes: { host: string; port: number }[];
  /** Where the servers keep nodes-P.conf and their logs (`<dir>/<port>/redis.log`); stop() removes it. */
  readonly dir: string;
  /** The redis-server pids, in the order of `nodes`. */
  readonly pids: number[];
  /** The masters CLUSTER NODES lists on the first live node, minus those flagged as failed. */
  masters(): Promise<{ host: string; port: number; id: string }[]>;
  /** SIGKILL the redis-server of this port (a master, for failover tests); resolves when the process is gone. */
  kill(port: number): Promise<void>;
  /** Resolves when CLUSTER INFO says cluster_state:ok on every live node and all 16384 slots are served by live masters. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface LocalClusterOptions {
  /**
   * The first of 6 consecutive ports; taken ports fail. Unset: the first free run from a start that
   * depends on the process id, tried again further up when another cluster binds it first.
   */
  basePort?: number;
  /** An empty or missing directory to work in (removed by stop()); default a fresh one under the OS temp dir. */
  dir?: string;
  nodeTimeoutMs?: number;
  /** Servers in their own session that outlive this process; see cluster-cli.ts. */
  detached?: boolean;
}

const HOST = '127.0.0.1';
const SIZE = 6;
const SLOTS = 16_384;
// Each node also listens on port + 10000 for the cluster bus, so that port must be free as well.
const BUS_OFFSET = 10_000;
const execFileAsync = promisify(execFile);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const hasSetpriv = (): boolean => process.platform === 'linux' && spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0;

async function cli(port: number, ...args: string[]): Promise<string> {
  return (await execFileAsync('redis-cli', ['-h', HOST, '-p', String(port), ...args], { timeout: 5_000 })).stdout;
}

/** Polls `notYet` (a reason, or undefined once done) until done; on timeout, rejects with the last reason. */
async function poll(what: string, timeoutMs: number, notYet: () => Promise<string | undefined>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const why = await notYet();
    if (why === undefined) return;
    if (Date.now() > deadline) throw new Error(`local Redis Cluster: ${what} did not happen within ${timeoutMs} ms (last: ${why})`);
    await sleep(100);
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

async function takenPort(base: number): Promise<number | undefined> {
  for (let p = base; p < base + SIZE; p++) for (const port of [p, p + BUS_OFFSET]) if (!(await portFree(port))) return port;
  return undefined;
}

const FIRST_PORT = 7100;
const LAST_BASE = 65_535 - BUS_OFFSET - SIZE + 1;

// Checked, then bound by redis-server a moment later: two clusters starting at once can still collide,
// so startLocalCluster tries the next run when a server cannot bind.
async function choosePorts(basePort: number | undefined, from: number): Promise<number> {
  if (basePort !== undefined) {
    const [last, bus] = [basePort + SIZE - 1, basePort + BUS_OFFSET];
    if (!Number.isInteger(basePort) || basePort < 1 || last + BUS_OFFSET > 65_535) throw new Error(`bad basePort ${basePort}`);
    const taken = await takenPort(basePort);
    if (taken === undefined) return basePort;
    throw new Error(`local Redis Cluster: port ${taken} is taken (needs ${basePort}–${last} and bus ports ${bus}–${last + BUS_OFFSET})`);
  }
  for (let base = from; base <= LAST_BASE; base += SIZE) {
    if ((await takenPort(base)) === undefined) return base;
  }
  throw new Error(`local Redis Cluster: no run of 6 free ports (and their bus ports) from ${from} up`);
}

type NodeLine = { id: string; port: number; flags: string[]; slots: number };

/** CLUSTER NODES: `<id> <ip:port@bus[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot ranges...>`. */
function parseNodes(text: string): NodeLine[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', address = '', flags = '', , , , , , ...ranges] = line.trim().split(' ');
      // `[slot->-id]` / `[slot-<-id]` entries are slots being migrated; the owner is listed separately.
      const slots = ranges
        .filter((r) => !r.startsWith('['))
        .reduce((n, r) => {
          const [from = 0, to = from] = r.split('-').map(Number);
          return n + to - from + 1;
        }, 0);
      return { id, port: Number(/:(\d+)@/.exec(address)?.[1]), flags: flags.split(','), slots };
    });
}

const failed = (n: NodeLine): boolean => n.flags.some((f) => f === 'fail' || f === 'fail?' || f === 'noaddr' || f === 'handshake');
// No pid: spawning failed, and Node may never send 'exit' for it.
const gone = (c: ChildProcess): boolean => c.pid === undefined || c.exitCode !== null || c.signalCode !== null;

const logTail = (file: string): string => readFileSync(file, 'utf8').trim().split('\n').slice(-3).join(' | ');

class PortTaken extends Error {}

export async function startLocalCluster(opts: LocalClusterOptions = {}): Promise<LocalCluster> {
  // Test files in parallel processes start clusters at once: spread their first tries apart.
  let from = FIRST_PORT + (process.pid % 200) * SIZE;
  for (let attempt = 1; ; attempt++) {
    const base = await choosePorts(opts.basePort, from);
    try {
      return await startOn(base, opts);
    } catch (err) {
      if (!(err instanceof PortTaken) || opts.basePort !== undefined || attempt >= 5) throw err;
      from = base + SIZE > LAST_BASE ? FIRST_PORT : base + SIZE;
    }
  }
}

async function startOn(base: number, opts: LocalClusterOptions): Promise<LocalCluster> {
  const { nodeTimeoutMs = 2_000, detached = false } = opts;
  const ports = Array.from({ length: SIZE }, (_, i) => base + i);
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'shelfwatch-cluster-')));
  await mkdir(dir, { recursive: true });
  // stop() removes the directory, so never adopt one that holds something else.
  if (opts.dir !== undefined && (await readdir(dir)).length > 0) throw new Error(`local Redis Cluster: ${dir} is not empty`);

  const children = new Map<number, ChildProcess>();
  // stop() for a process that exits without calling it (only sync calls work here). Also armed while
  // detached servers start up, so that a CLI interrupted mid-start leaves no half cluster behind.
  const killAll = (): void => {
    for (const c of children.values()) if (!gone(c)) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };
  process.on('exit', killAll);
  const pdeathsig = !detached && hasSetpriv();

  const spawnServer = (port: number): ChildProcess => {
    const nodeDir = join(dir, String(port));
    mkdirSync(nodeDir);
    const args = [
      ...['--port', String(port), '--bind', HOST, '--daemonize', 'no', '--dir', nodeDir],
      ...['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(nodeTimeoutMs)],
      // 0: a replica may always take over, however long it has been cut off from its master.
      ...['--cluster-replica-validity-factor', '0'],
      ...['--appendonly', 'no', '--save', '', '--maxmemory-policy', 'noeviction'],
      // The default 5 s wait for more replicas before a diskless full sync would make up most of startup.
      ...['--repl-diskless-sync-delay', '0'],
    ];
    const [command, argv] = pdeathsig ? ['setpriv', ['--pdeathsig', 'KILL', '--', 'redis-server', ...args]] : ['redis-server', args];
    const log = openSync(join(nodeDir, 'redis.log'), 'a');
    try {
      const child = spawn(command, argv, { stdio: ['ignore', log, log], detached });
      child.on('error', () => undefined); // shows as a server that exited, with its log
      if (detached) child.unref();
      return child;
    } finally {
      closeSync(log);
    }
  };

  const live = (): number[] => [...children].filter(([, c]) => !gone(c)).map(([p]) => p);
  const stop = async (): Promise<void> => {
    await Promise.all([...children.keys()].map((p) => cluster.kill(p)));
    process.off('exit', killAll);
    await rm(dir, { recursive: true, force: true });
  };

  const cluster: LocalCluster = {
    nodes: ports.map((port) => ({ host: HOST, port })),
    dir,
    get pids() {
      return ports.map((p) => children.get(p)?.pid ?? -1);
    },

    async masters() {
      for (const port of live()) {
        const text = await cli(port, 'CLUSTER', 'NODES').catch(() => '');
        if (!text) continue;
        return parseNodes(text)
          .filter((n) => n.flags.includes('master') && !failed(n))
          .map((n) => ({ host: HOST, port: n.port, id: n.id }));
      }
      throw new Error('local Redis Cluster: no live node answered CLUSTER NODES');
    },

    async kill(port) {
      const child = children.get(port);
      if (!child) throw new Error(`local Redis Cluster: no server of this cluster on port ${port}`);
      if (gone(child)) return;
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    },

    async waitHealthy(timeoutMs = 30_000) {
      await poll('cluster_state:ok with all slots on live masters', timeoutMs, async () => {
        const alive = live();
        for (const port of alive) {
          const info = await cli(port, 'CLUSTER', 'INFO').catch((e: Error) => e.message);
          if (!info.includes('cluster_state:ok')) return `${port}: ${/cluster_state:\w+/.exec(info)?.[0] ?? info.trim()}`;
          // A node keeps saying ok for node-timeout after a master died, so count the slots of the living.
          const served = parseNodes(await cli(port, 'CLUSTER', 'NODES').catch(() => ''))
            .filter((n) => n.flags.includes('master') && !failed(n) && alive.includes(n.port))
            .reduce((sum, n) => sum + n.slots, 0);
          if (served !== SLOTS) return `${port} sees ${served} of ${SLOTS} slots on live masters`;
        }
        return undefined;
      });
    },

    stop,
  };

  try {
    for (const port of ports) children.set(port, spawnServer(port));
    await poll('every server answering PING', 10_000, async () => {
      for (const port of ports) {
        const child = children.get(port)!;
        if (gone(child)) {
          const tail = logTail(join(dir, String(port), 'redis.log'));
          const message = `local Redis Cluster: redis-server on port ${port} exited: ${tail}`;
          throw tail.includes('Address already in use') ? new PortTaken(message) : new Error(message);
        }
        if ((await cli(port, 'PING').catch(() => '')).trim() !== 'PONG') return `${port} does not answer`;
      }
      return undefined;
    });
    const seeds = ports.map((p) => `${HOST}:${p}`);
    await execFileAsync('redis-cli', ['--cluster', 'create', ...seeds, '--cluster-replicas', '1', '--cluster-yes'], {
      timeout: 60_000,
    }).catch((e: Error & { stdout?: string }) => {
      throw new Error(`local Redis Cluster: redis-cli --cluster create failed: ${e.message}\n${e.stdout ?? ''}`);
    });
    await cluster.waitHealthy();
    // Slots converge before roles do: just after create, a node may still list a replica as a master,
    // and a WAIT may find a replica still in its first full sync.
    await poll('every replica in sync and known as one by every node', 10_000, async () => {
      for (const port of ports) {
        const info = await cli(port, 'INFO', 'replication').catch((e: Error) => e.message);
        if (!info.includes('role:')) return `${port}: ${info.trim()}`;
        if (info.includes('role:slave') && !info.includes('master_link_status:up')) return `${port}: replication link not up`;
        const replicas = parseNodes(await cli(port, 'CLUSTER', 'NODES').catch(() => '')).filter((n) => n.flags.includes('slave')).length;
        if (replicas !== SIZE / 2) return `${port} knows ${replicas} of ${SIZE / 2} replicas`;
      }
      return undefined;
    });
  } catch (err) {
    await stop();
    throw err;
  }
  if (detached) process.off('exit', killAll);
  return cluster;
}
