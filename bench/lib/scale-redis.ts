/**
 * The Redis of a bench:scale run, node by node: the benchmark's single Redis (lib/infra.ts), or a
 * local Redis Cluster of 3 masters and 3 replicas (test/cluster/local-cluster.ts) started once for
 * the runs on it. The benchmark talks to each node with a plain connection of its own: `INFO
 * commandstats` per node (its INFO calls are left out), and where each hash tag lives (`CLUSTER
 * KEYSLOT`, `CLUSTER SLOTS`), asked before a window so that these commands stay out of it.
 */
import { Redis } from 'ioredis';
import { startLocalCluster, type LocalCluster } from '../../test/cluster/local-cluster.js';
import { keyPattern } from '../../src/db/redis-keys.js';
import type { Infra } from './infra.js';

export interface RedisNodeRef {
  /** host:port */
  readonly addr: string;
  readonly role: 'master' | 'replica';
  /** The redis-server's pid when it runs on this machine. */
  readonly pid: number | undefined;
}

export interface RedisSide {
  readonly kind: 'single' | 'cluster';
  /** What every product process adds to its environment (REDIS_URL, and REDIS_CLUSTER_NODES on the cluster). */
  readonly env: Record<string, string>;
  /** The nodes and their roles now (CLUSTER SLOTS on the cluster). */
  nodes(): Promise<RedisNodeRef[]>;
  /** Calls so far by command, per node (`INFO commandstats`; INFO itself left out). */
  commandStats(): Promise<Record<string, Record<string, number>>>;
  /** The master that serves each key or hash tag. */
  placement(keys: readonly string[]): Promise<Record<string, string>>;
  /** Deletes a prefix's keys (a run's cleanup). */
  forget(prefix: string): Promise<void>;
  close(): Promise<void>;
}

type SlotRange = [number, number, ...[string, number, string?][]];

async function commandStatsOf(r: Redis): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const info = await r.info('commandstats');
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== 'info') out[m[1]!] = Number(m[2]);
  return out;
}

async function deleteMatching(r: Redis, pattern: string, oneByOne: boolean): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (!keys.length) continue;
    // A cluster node refuses a multi-key UNLINK across slots (CROSSSLOT): one key per command there.
    if (oneByOne) {
      const pipe = r.pipeline();
      for (const k of keys) pipe.unlink(k);
      await pipe.exec();
    } else await r.unlink(...keys);
  } while (cursor !== '0');
}

/** The benchmark's single Redis (a dedicated redis-server unless REDIS_URL is set). */
export function singleRedis(inf: Infra): RedisSide {
  const r = new Redis(inf.redisUrl, { maxRetriesPerRequest: 3 });
  const addr = new URL(inf.redisUrl).host;
  return {
    kind: 'single',
    env: { REDIS_URL: inf.redisUrl },
    nodes: () => Promise.resolve([{ addr, role: 'master', pid: inf.redisPid }]),
    commandStats: async () => ({ [addr]: await commandStatsOf(r) }),
    placement: (keys) => Promise.resolve(Object.fromEntries(keys.map((k) => [k, addr]))),
    forget: (prefix) => deleteMatching(r, keyPattern(prefix), false),
    close: async () => void r.disconnect(),
  };
}

/** A local Redis Cluster of its own (about 3 s to start); close() stops it and removes its files. */
export async function clusterRedis(): Promise<RedisSide> {
  const cluster: LocalCluster = await startLocalCluster();
  const clients = new Map(
    cluster.nodes.map((n) => [`${n.host}:${n.port}`, new Redis({ host: n.host, port: n.port, maxRetriesPerRequest: 3 })]),
  );
  const pids = new Map(cluster.nodes.map((n, i) => [`${n.host}:${n.port}`, cluster.pids[i]]));
  const any = (): Redis => clients.values().next().value!;
  const slots = async (): Promise<SlotRange[]> => (await any().call('CLUSTER', 'SLOTS')) as SlotRange[];
  const masterOf = (ranges: SlotRange[], slot: number): string => {
    const hit = ranges.find(([from, to]) => slot >= from && slot <= to);
    return hit ? `${hit[2]![0]}:${hit[2]![1]}` : 'unserved';
  };
  const mastersNow = async (): Promise<Set<string>> => new Set((await slots()).map((s) => `${s[2]![0]}:${s[2]![1]}`));
  const seeds = [...clients.keys()].join(',');
  return {
    kind: 'cluster',
    env: { REDIS_URL: `redis://${[...clients.keys()][0]}`, REDIS_CLUSTER_NODES: seeds },
    async nodes() {
      const masters = await mastersNow();
      return [...clients.keys()].map((addr) => ({ addr, role: masters.has(addr) ? 'master' : 'replica', pid: pids.get(addr) }));
    },
    async commandStats() {
      const entries = await Promise.all([...clients].map(async ([addr, c]) => [addr, await commandStatsOf(c)] as const));
      return Object.fromEntries(entries);
    },
    async placement(keys) {
      const ranges = await slots();
      const out: Record<string, string> = {};
      for (const k of keys) out[k] = masterOf(ranges, Number(await any().call('CLUSTER', 'KEYSLOT', k)));
      return out;
    },
    async forget(prefix) {
      const masters = await mastersNow();
      for (const addr of masters) await deleteMatching(clients.get(addr)!, keyPattern(prefix), true);
    },
    async close() {
      for (const c of clients.values()) c.disconnect();
      await cluster.stop();
    },
  };
}

/** Calls between two commandStats readings, per node and command. */
export function commandsBetween(
  before: Record<string, Record<string, number>>,
  after: Record<string, Record<string, number>>,
): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const [addr, cmds] of Object.entries(after)) {
    const row: Record<string, number> = {};
    for (const [cmd, n] of Object.entries(cmds)) {
      const d = n - (before[addr]?.[cmd] ?? 0);
      if (d > 0) row[cmd] = d;
    }
    out[addr] = row;
  }
  return out;
}
