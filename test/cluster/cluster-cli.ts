import { existsSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startLocalCluster } from './local-cluster.js';

/**
 * A local Redis Cluster that outlives the command, for benchmarks and manual runs:
 *   node --import tsx test/cluster/cluster-cli.ts up [--port 7100]    prints REDIS_CLUSTER_NODES=...
 *   node --import tsx test/cluster/cluster-cli.ts down [--port 7100]
 * The servers run in their own session; <tmpdir>/shelfwatch-cluster-<port>/state.json remembers them for `down`.
 */
interface State {
  basePort: number;
  dir: string;
  nodes: { port: number; pid: number }[];
}

const { positionals, values } = parseArgs({ allowPositionals: true, options: { port: { type: 'string', default: '7100' } } });
const command = positionals[0];
const basePort = Number(values.port);
const dir = join(tmpdir(), `shelfwatch-cluster-${basePort}`);
const stateFile = join(dir, 'state.json');

const seedLine = (ports: number[]): string => `REDIS_CLUSTER_NODES=${ports.map((p) => `127.0.0.1:${p}`).join(',')}`;

function readState(): State | undefined {
  return existsSync(stateFile) ? (JSON.parse(readFileSync(stateFile, 'utf8')) as State) : undefined;
}

/** Alive and still our server: a pid reused by another program since `up` must not be killed. */
function ours(pid: number, port: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // A zombie is dead already; it only waits for init to reap it.
    if (/^\d+ \(.*\) Z/.test(stat)) return false;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('redis-server') && cmdline.includes(`:${port}`);
  } catch {
    return false;
  }
}

async function down(): Promise<void> {
  const state = readState();
  const running = state?.nodes.filter((n) => ours(n.pid, n.port)) ?? [];
  for (const n of running) process.kill(n.pid, 'SIGKILL');
  const deadline = Date.now() + 5_000;
  while (running.some((n) => ours(n.pid, n.port))) {
    if (Date.now() > deadline) throw new Error(`redis-server pids ${running.map((n) => n.pid).join(', ')} did not die within 5 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await rm(dir, { recursive: true, force: true });
  process.stderr.write(
    state ? `stopped ${running.length} redis-server(s), removed ${dir}\n` : `no cluster on ${basePort} (no ${stateFile})\n`,
  );
}

async function up(): Promise<void> {
  const state = readState();
  if (state?.nodes.every((n) => ours(n.pid, n.port))) {
    process.stderr.write(`already up (${stateFile})\n`);
    process.stdout.write(`${seedLine(state.nodes.map((n) => n.port))}\n`);
    return;
  }
  // Left over from a cluster that died or a start that was cut short.
  if (existsSync(dir)) await down();

  // Interrupted mid-start: exiting (unlike dying of the signal) runs local-cluster's 'exit' handler,
  // which kills the servers started so far and removes the directory.
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
  const cluster = await startLocalCluster({ basePort, dir, detached: true });
  const nodes = cluster.nodes.map((n, i) => ({ port: n.port, pid: cluster.pids[i]! }));
  await writeFile(stateFile, JSON.stringify({ basePort, dir, nodes } satisfies State, null, 2));
  process.stdout.write(`${seedLine(nodes.map((n) => n.port))}\n`);
}

if ((command !== 'up' && command !== 'down') || !Number.isInteger(basePort)) {
  process.stderr.write('usage: cluster-cli.ts up|down [--port 7100]\n');
  process.exit(2);
}
try {
  await (command === 'up' ? up() : down());
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
