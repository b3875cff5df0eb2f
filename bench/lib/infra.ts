/**
 * Where a benchmark's data lives, and how everything it started is stopped again.
 *
 * MongoDB: MONGODB_URI when given (a database of the run's own on it, dropped at the end), else
 * mongodb-memory-server; where that cannot start (no download) the benchmark stops and says to set
 * MONGODB_URI. Redis: REDIS_URL when given (a key prefix of the run's own, deleted at the end), else
 * a dedicated redis-server child on a free port, which also makes `INFO commandstats` count this
 * run's commands only.
 */
import { randomBytes } from 'node:crypto';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { Redis } from 'ioredis';
import type { Connection } from 'mongoose';
import { connectMongo } from '../../src/db/mongo.js';
import { startEmbeddedRedis } from '../../src/embedded/redis-server.js';
import { startEmbeddedMongo } from '../../src/embedded/mongo-server.js';
import { EmbeddedUnavailableError } from '../../src/core/errors.js';
import { liveChildren } from './proc.js';
import { keyPattern } from '../../src/db/redis-keys.js';

export class BenchUnavailableError extends Error {
  override readonly name = 'BenchUnavailableError';
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
}

// ---- cleanup ---------------------------------------------------------------------------------

type Cleanup = () => Promise<unknown>;
const cleanups: { what: string; fn: Cleanup }[] = [];

/** Registers something to undo at the end (last registered, first undone). */
export function onCleanup(what: string, fn: Cleanup): void {
  cleanups.push({ what, fn });
}

/** Where the cleanups registered from now on begin (see cleanUp). */
export function cleanupMark(): number {
  return cleanups.length;
}

/**
 * Stops every child still running, then undoes what was registered after `mark` (default:
 * everything), last first; one failure does not stop the rest. A benchmark undoes its own part
 * (mark taken after getInfra) so the next one in run.ts starts on an idle machine and the same servers.
 */
export async function cleanUp(mark = 0): Promise<void> {
  await Promise.allSettled(liveChildren().map((c) => c.stop(10_000)));
  while (cleanups.length > mark) {
    const { what, fn } = cleanups.pop()!;
    try {
      await fn();
    } catch (err) {
      console.error(`bench: cleanup of ${what} failed: ${(err as Error).message}`);
    }
  }
}

/** Runs one benchmark on the shared servers and undoes what it started and wrote, also when it fails. */
export async function withOwnCleanup<T>(inf: Infra | undefined, measure: (inf: Infra) => Promise<T>): Promise<T> {
  const infra = inf ?? (await getInfra());
  const mark = cleanupMark();
  try {
    return await measure(infra);
  } finally {
    await cleanUp(mark);
  }
}

// A benchmark killed by Ctrl-C (or that exits in an unexpected way) must not leave the product's
// processes running: the signal handlers clean up properly, the exit hook kills what is left.
let hooksInstalled = false;
function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`bench: ${sig}: stopping everything this run started`);
      void cleanUp().finally(() => process.exit(130));
    });
  }
  process.on('exit', () => {
    for (const c of liveChildren()) c.proc.kill('SIGKILL');
  });
}

/**
 * Runs a benchmark as a program: bounded by `deadlineMs`, cleaned up whatever happens. Exit codes:
 * 0 done (targets missed or not: a benchmark reports, it does not judge), 1 failed, 69 no database.
 */
export async function runMain(name: string, deadlineMs: number, fn: () => Promise<unknown>): Promise<void> {
  installHooks();
  const deadline = setTimeout(() => {
    console.error(`bench ${name}: still running after ${Math.round(deadlineMs / 1000)} s: giving up`);
    void cleanUp().finally(() => process.exit(1));
  }, deadlineMs);
  deadline.unref();
  let code = 0;
  try {
    await fn();
  } catch (err) {
    code = err instanceof BenchUnavailableError ? 69 : 1;
    // A missing database is a set-up matter: its message says what to do, a stack would bury it.
    const text = err instanceof BenchUnavailableError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
    console.error(`bench ${name}: ${text}`);
  } finally {
    await cleanUp();
    clearTimeout(deadline);
  }
  process.exit(code);
}

// ---- MongoDB and Redis ----------------------------------------------------------------------

export interface Infra {
  /** `mongodb://…/<db>` for a database name. */
  mongoUri(db: string): string;
  readonly mongoSource: 'MONGODB_URI' | 'mongodb-memory-server';
  readonly redisUrl: string;
  readonly redisSource: 'REDIS_URL' | 'dedicated redis-server';
  /** The server's version (buildInfo); the CI stand-in says "emulator" in it. */
  readonly mongoVersion: string;
  readonly mongoIsEmulator: boolean;
  readonly redisVersion: string;
  /** Server process ids when they run on this machine (for their CPU); undefined otherwise. */
  readonly mongoPid: number | undefined;
  readonly redisPid: number | undefined;
}

function withDb(uri: string, db: string): string {
  const u = new URL(uri);
  u.pathname = `/${db}`;
  return u.toString();
}

function isLoopback(host: string): boolean {
  return ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(host);
}

let infra: Promise<Infra> | undefined;

/** The MongoDB and Redis of this run, started once per process (run.ts shares them across benchmarks). */
export function getInfra(): Promise<Infra> {
  infra ??= startInfra();
  return infra;
}

async function startInfra(): Promise<Infra> {
  let baseUri = process.env.MONGODB_URI || undefined;
  let mongoSource: Infra['mongoSource'] = 'MONGODB_URI';
  if (!baseUri) {
    mongoSource = 'mongodb-memory-server';
    try {
      const mongo = await startEmbeddedMongo();
      onCleanup('mongodb-memory-server', () => mongo.stop());
      baseUri = mongo.uri;
    } catch (err) {
      const why = err instanceof EmbeddedUnavailableError ? err.message : String(err);
      throw new BenchUnavailableError(
        `no MongoDB for the benchmark: ${why}.\n` +
          "Set MONGODB_URI to a MongoDB you run (a database of the run's own is created and dropped), e.g.\n" +
          '  MONGODB_URI=mongodb://127.0.0.1:27017 npm run bench',
      );
    }
  }
  let redisUrl = process.env.REDIS_URL || undefined;
  let redisSource: Infra['redisSource'] = 'REDIS_URL';
  if (!redisUrl) {
    redisSource = 'dedicated redis-server';
    try {
      const redis = await startEmbeddedRedis();
      onCleanup('dedicated redis-server', () => redis.stop());
      redisUrl = redis.url;
    } catch (err) {
      throw new BenchUnavailableError(`no Redis for the benchmark: ${(err as Error).message}`);
    }
  }

  const probe = await connectMongo({ uri: withDb(baseUri, 'admin') });
  let mongoVersion: string;
  let mongoPid: number | undefined;
  try {
    const admin = probe.db!.admin();
    mongoVersion = String((await admin.command({ buildInfo: 1 })).version ?? 'unknown');
    const status = await admin.command({ serverStatus: 1 }).catch(() => ({}) as Record<string, unknown>);
    if (isLoopback(new URL(baseUri).hostname) && status.pid !== undefined) mongoPid = Number(status.pid);
  } finally {
    await probe.close();
  }
  const r = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  let redisVersion: string;
  let redisPid: number | undefined;
  try {
    await r.connect();
    const info = await r.info('server');
    redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    const pid = /process_id:(\d+)/.exec(info)?.[1];
    if (pid && isLoopback(new URL(redisUrl).hostname)) redisPid = Number(pid);
  } finally {
    r.disconnect();
  }
  const base = baseUri;
  return {
    mongoUri: (db) => withDb(base, db),
    mongoSource,
    redisUrl,
    redisSource,
    mongoVersion,
    mongoIsEmulator: /emulator/i.test(mongoVersion),
    redisVersion,
    mongoPid,
    redisPid,
  };
}

/** A database of the run's own, dropped at cleanup. */
export async function ownDatabase(inf: Infra, prefix: string): Promise<{ name: string; uri: string; conn: Connection }> {
  const name = uniqueName(prefix);
  const uri = inf.mongoUri(name);
  const conn = await connectMongo({ uri });
  onCleanup(`database ${name}`, async () => {
    await conn.dropDatabase().catch(() => undefined);
    await conn.close();
  });
  return { name, uri, conn };
}

/** A Redis client for the benchmark itself, plus the deletion of a key prefix at cleanup. */
export async function ownRedis(inf: Infra, prefix: string): Promise<Redis> {
  const r = new Redis(inf.redisUrl, { maxRetriesPerRequest: 3 });
  onCleanup(`Redis keys ${keyPattern(prefix)}`, async () => {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', keyPattern(prefix), 'COUNT', 1000);
      cursor = next;
      if (keys.length) await r.del(...keys);
    } while (cursor !== '0');
    r.disconnect();
  });
  return r;
}

/** Commands Redis has run so far, from `INFO commandstats` (the INFO calls themselves left out). */
/**
 * Commands the clients send Redis (what each process pays a round trip or a pipeline slot for),
 * counted with MONITOR from `start` to `stop`: Redis counts the commands a Lua script runs as
 * commands too (INFO commandstats), and MONITOR tells them apart (their source is `lua`). The
 * benchmark's own INFO and MONITOR are left out.
 */
export async function monitorClientCommands(
  url: string,
): Promise<{ stop(): Promise<{ total: number; byCommand: Record<string, number> }> }> {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  const monitor = await r.monitor();
  const byCommand = new Map<string, number>();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const name = String(args[0] ?? '').toLowerCase();
    if (source === 'lua' || name === 'info' || name === 'monitor') return;
    byCommand.set(name, (byCommand.get(name) ?? 0) + 1);
  });
  return {
    async stop() {
      monitor.disconnect();
      r.disconnect();
      const sorted = [...byCommand].sort((a, b) => b[1] - a[1]);
      return { total: sorted.reduce((n, [, c]) => n + c, 0), byCommand: Object.fromEntries(sorted) };
    },
  };
}

export async function redisCommandCount(r: Redis): Promise<number> {
  const info = await r.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== 'info') total += Number(m[2]);
  return total;
}

export function environmentOf(inf: Infra): Record<string, unknown> {
  return {
    node: process.version,
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? null,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    mongo: { source: inf.mongoSource, version: inf.mongoVersion, emulator: inf.mongoIsEmulator },
    redis: { source: inf.redisSource, version: inf.redisVersion },
  };
}

/** The environment every product process of one benchmark shares: its database, prefix and key. */
export function productEnv(
  inf: Infra,
  db: { uri: string },
  prefix: string,
  appKey: string,
  countries: readonly string[],
): Record<string, string> {
  return {
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    MONGODB_URI: db.uri,
    REDIS_URL: inf.redisUrl,
    REDIS_PREFIX: prefix,
    APP_KEY: appKey,
    COUNTRIES: countries.join(','),
  };
}
