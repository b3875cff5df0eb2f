/**
 * One run of bench:scale on fresh data: its own database, Redis prefix, simulator (so its counters
 * start at zero) and product processes started with the CLI, as bench/refresh.ts does: the
 * simulator, N workers, then the scheduler, whose start begins the run. A watched ASINs tracked in
 * every country of the run, all due at once. After the first upstream call and a warm-up, a window
 * of T seconds between two readings of every counter; then the processes stop and MongoDB says
 * when each product was refreshed (a batch writes one time on all its products). What it returns
 * is raw; lib/scale-measures.ts makes the figures.
 */
import { readFileSync } from 'node:fs';
import { generateAppKey, parseAppKey } from '../../config/app-key.js';
import { UserService } from '../../src/users/service.js';
import { registerModels } from '../../src/models/index.js';
import { countryTag, sharedTag } from '../../src/db/redis-keys.js';
import type { Country } from '../../src/core/identifiers.js';
import { onCleanup, ownDatabase, productEnv, uniqueName, type Infra } from './infra.js';
import { metricsText, mongoRoundTrips } from './metrics-text.js';
import { prioritise, sampleProc, spawnCli, type Child, type ProcSample } from './proc.js';
import type { RedisNodeRef, RedisSide } from './scale-redis.js';
import type { ScaleParams, Scenario } from './scale-params.js';
import { asinOf, insertChunks, priorityOf, productDoc, watchDoc } from './seed.js';
import { simulatorCalls, type CountryCalls } from './upstream-probe.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) => console.log(`scale: ${new Date().toISOString().slice(11, 19)} ${line}`);

/** What each process is, for the sums: the product's (workers and scheduler) against the rest. */
export type ProcKind = 'product' | 'simulator' | 'redis' | 'mongodb' | 'bench';

export interface Watched {
  readonly name: string;
  readonly pid: number;
  readonly kind: ProcKind;
}

/** The whole machine's CPU time from /proc/stat (every process, other users' too), in clock ticks. */
export interface MachineCpu {
  readonly busy: number;
  readonly total: number;
}

function machineCpu(): MachineCpu | null {
  try {
    const [, ...f] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
    const n = f.map(Number);
    const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: total - n[3]! - n[4]!, total };
  } catch {
    return null;
  }
}

/** Per country: ASINs the workers asked for and their getItems calls answered ok (their /metrics). */
export type UpstreamCounters = Record<string, { asked: number; okCalls: number }>;

async function upstreamCounters(urls: readonly string[]): Promise<UpstreamCounters> {
  const out: UpstreamCounters = {};
  for (const url of urls) {
    const text = await metricsText(url);
    for (const m of text.matchAll(/^shelfwatch_upstream_items_total\{([^}]*)\} (\S+)$/gm)) {
      const c = /country="([^"]+)"/.exec(m[1]!)?.[1];
      if (c) (out[c] ??= { asked: 0, okCalls: 0 }).asked += Number(m[2]);
    }
    for (const m of text.matchAll(/^shelfwatch_upstream_calls_total\{([^}]*)\} (\S+)$/gm)) {
      const c = /country="([^"]+)"/.exec(m[1]!)?.[1];
      if (c && m[1]!.includes('operation="getItems"') && m[1]!.includes('result="ok"'))
        (out[c] ??= { asked: 0, okCalls: 0 }).okCalls += Number(m[2]);
    }
  }
  return out;
}

/** Per country: the margin the governor paces by on top of 1/Q (ms), as the workers' /metrics read it from Redis. */
async function paceMargins(urls: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const url of urls) {
    const text = await metricsText(url);
    for (const m of text.matchAll(/^shelfwatch_quota_pace_margin_seconds\{country="([^"]+)"\} (\S+)$/gm))
      out[m[1]!] = Math.max(out[m[1]!] ?? 0, Number(m[2]) * 1_000);
  }
  return out;
}

export interface Reading {
  readonly t: number;
  readonly procs: Record<string, ProcSample | null>;
  readonly machine: MachineCpu | null;
  readonly redis: Record<string, Record<string, number>>;
  readonly sim: Record<string, CountryCalls>;
  readonly upstream: UpstreamCounters;
  readonly mongo: Record<string, number>;
}

/** One refresh call as MongoDB recorded it: its write time and how many products it wrote. */
export interface Batch {
  readonly t: number;
  readonly items: number;
}

export interface RunData {
  readonly scenario: Scenario;
  readonly prefix: string;
  readonly database: string;
  readonly env: Record<string, string>;
  readonly tSched: number;
  readonly firstCall: number;
  readonly window: { readonly from: number; readonly to: number };
  readonly readings: { readonly start: Reading; readonly from: Reading; readonly to: Reading };
  /** Every batch written after the scheduler's start, per country, in time order. */
  readonly batches: Record<string, Batch[]>;
  /** The pace margin on top of 1/Q each country had settled at by the window's end (ms). */
  readonly margins: Record<string, number>;
  /** Products not refreshed by the window's end, per country: above 0, the country was still backlogged. */
  readonly remaining: Record<string, number>;
  /** The master that serves each country's tag, and each shared group's. */
  readonly placement: { readonly countries: Record<string, string>; readonly shared: Record<string, string> };
  readonly nodes: readonly RedisNodeRef[];
  readonly watched: readonly Watched[];
  readonly warnings: Record<string, Record<string, number>>;
  readonly timings: Record<string, number>;
  /** The simulator's scheduling priority as set, or why it was left as started. */
  readonly simPriority: string;
}

/** Seeds, starts the product, measures one window and stops the product; cleanups are registered with lib/infra.ts. */
export async function runScale(inf: Infra, side: RedisSide, p: ScaleParams, s: Scenario): Promise<RunData> {
  const timings: Record<string, number> = {};
  const started = Date.now();
  const countries = s.countries as readonly Country[];
  const db = await ownDatabase(inf, 'sw_bench_scale');
  const prefix = uniqueName('swb_scale');
  onCleanup(`Redis keys of ${prefix}`, () => side.forget(prefix));
  registerModels(db.conn);
  await Promise.all(Object.values(db.conn.models).map((m) => m.createIndexes()));
  const appKeyText = generateAppKey();
  const { user } = await new UserService(db.conn, parseAppKey(appKeyText)!).create({ name: 'bench', email: 'bench@bench.example.com' });
  const due = new Date(Date.now() - 1_000);
  const asins = Array.from({ length: p.asins }, (_, i) => asinOf(i));
  await insertChunks(db.conn, 'watches', asins.length, (i) => watchDoc(user._id, asins[i]!, priorityOf(i, p.p1Share), due));
  for (const country of countries) {
    await insertChunks(db.conn, 'products', asins.length, (i) =>
      productDoc({ country, asin: asins[i]!, priority: priorityOf(i, p.p1Share), nextRefreshAt: due, createdAt: due }),
    );
  }
  timings.seedS = (Date.now() - started) / 1000;
  say(`${s.label}: seeded ${p.asins} watched ASINs × ${countries.length} countries in ${timings.seedS.toFixed(1)} s`);

  const env: Record<string, string> = {
    ...productEnv(inf, db, prefix, appKeyText, countries),
    ...side.env,
    QUOTA_RPS: String(p.productQuota),
    // The day is not what this measures: large enough that the planner's spreading never lowers the pace.
    QUOTA_PER_DAY: '1000000000',
    SHUTDOWN_TIMEOUT_MS: '8000',
    WORKER_SHUTDOWN_MS: '3s',
  };
  const t1 = Date.now();
  const sim = spawnCli(`simulator (${s.label})`, ['simulator'], {
    ...env,
    SIMULATOR_QUOTA_RPS: String(p.quota),
    SIMULATOR_QUOTA_PER_DAY: '1000000000',
    // The bucket's depth: a second's worth unless --burst says otherwise (one call at Q = 1).
    ...(p.burst === null ? {} : { SIMULATOR_QUOTA_BURST: String(p.burst) }),
    SIMULATOR_JITTER_MS: String(p.jitterMs),
    SIMULATOR_FAULTS: JSON.stringify({ latencyMs: p.latencyMs }),
  });
  const simPriority = prioritise(sim.pid, p.simNice);
  const simUrl = String((await sim.waitForLog((l) => l.msg === 'upstream simulator listening')).url);
  const pinned = (i: number): Record<string, string> =>
    p.pin ? { WORKER_COUNTRIES: countries.filter((_, j) => j % s.workers === i).join(',') || countries[0]! } : {};
  const workers = Array.from({ length: s.workers }, (_, i) =>
    spawnCli(
      `worker-${i + 1}`,
      ['worker'],
      { ...env, ...pinned(i), SIMULATOR_URL: simUrl, METRICS_PORT: '0' },
      process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [],
    ),
  );
  // Both lines are waited for at once: a child's lines are only matched while someone waits.
  const metricsUrls = await Promise.all(
    workers.map(async (w) => {
      const [ops] = await Promise.all([
        w.waitForLog((l) => l.msg === 'metrics and health listening', 120_000),
        w.waitForLog((l) => l.msg === 'workers started', 120_000),
      ]);
      return String(ops.url);
    }),
  );
  timings.workersReadyS = (Date.now() - t1) / 1000;

  // Where each country lives, asked before any window (these commands stay out of it).
  const sharedGroups = ['accounts', 'auth', 'locks', 'deliveries'] as const;
  const tags = await side.placement([...countries.map((c) => countryTag(prefix, c)), ...sharedGroups.map((g) => sharedTag(prefix, g))]);
  const placement = {
    countries: Object.fromEntries(countries.map((c) => [c, tags[countryTag(prefix, c)]!])),
    shared: Object.fromEntries(sharedGroups.map((g) => [g, tags[sharedTag(prefix, g)]!])),
  };

  const scheduler = spawnCli('scheduler', ['scheduler'], { ...env, METRICS_PORT: '0' });
  const children: Child[] = [sim, ...workers, scheduler];
  const [schedOps] = await Promise.all([
    scheduler.waitForLog((l) => l.msg === 'metrics and health listening'),
    scheduler.waitForLog((l) => l.msg === 'scheduler started'),
  ]);
  const productMetrics = [...metricsUrls, String(schedOps.url)];
  const nodes0 = await side.nodes();
  const watched: Watched[] = [
    ...workers.map((w) => ({ name: w.name, pid: w.pid, kind: 'product' as const })),
    { name: 'scheduler', pid: scheduler.pid, kind: 'product' },
    { name: 'simulator', pid: sim.pid, kind: 'simulator' },
    ...nodes0.flatMap((n) => (n.pid ? [{ name: `redis ${n.addr}`, pid: n.pid, kind: 'redis' as const }] : [])),
    ...(inf.mongoPid
      ? [{ name: `mongodb (${inf.mongoIsEmulator ? 'stand-in' : 'mongod'})`, pid: inf.mongoPid, kind: 'mongodb' as const }]
      : []),
    { name: 'bench (this process)', pid: process.pid, kind: 'bench' },
  ];
  const read = async (): Promise<Reading> => {
    // CPU first and at once: the window's edges are these samples.
    const t = Date.now();
    const procs = Object.fromEntries(watched.map((w) => [w.name, sampleProc(w.pid)]));
    const machine = machineCpu();
    const [redis, simCalls, upstream, mongo] = await Promise.all([
      side.commandStats(),
      simulatorCalls(simUrl),
      upstreamCounters(metricsUrls),
      mongoRoundTrips(productMetrics),
    ]);
    return { t, procs, machine, redis, sim: simCalls, upstream, mongo };
  };
  const tSched = Date.now();
  const start = await read();

  // The run is backlogged from the first call on: every product is due.
  let firstCall = 0;
  while (!firstCall) {
    const calls = Object.values(await simulatorCalls(simUrl)).reduce((n, c) => n + (c.byOperation.getItems ?? 0), 0);
    if (calls > 0) firstCall = Date.now();
    else if (Date.now() - tSched > 120_000) throw new Error(`${s.label}: no upstream call 120 s after the scheduler started`);
    else await sleep(250);
  }
  say(
    `${s.label}: first call ${((firstCall - tSched) / 1000).toFixed(1)} s after the scheduler's start; warm-up ${p.warmupS} s, window ${p.seconds} s`,
  );
  await sleep(p.warmupS * 1000);
  const from = await read();
  await sleep(Math.max(0, from.t + p.seconds * 1000 - Date.now()));
  const to = await read();
  const margins = await paceMargins(metricsUrls).catch(() => ({}));
  const nodes = await side.nodes();
  const warnings = Object.fromEntries(children.map((c) => [c.name, Object.fromEntries(c.warnings)]));
  // Stop the product before reading MongoDB, so the reads do not compete with it.
  await Promise.all(children.map((c) => c.stop()));

  const docs = (await db.conn
    .db!.collection('products')
    .find({}, { projection: { _id: 0, country: 1, last_attempt_at: 1 } })
    .toArray()) as unknown as { country: string; last_attempt_at: Date | null }[];
  const byTime: Record<string, Map<number, number>> = {};
  const remaining: Record<string, number> = Object.fromEntries(countries.map((c) => [c, 0]));
  for (const d of docs) {
    const t = d.last_attempt_at?.getTime();
    if (t === undefined || t > to.t) remaining[d.country] = (remaining[d.country] ?? 0) + 1;
    if (t !== undefined && t >= tSched) {
      const m = (byTime[d.country] ??= new Map());
      m.set(t, (m.get(t) ?? 0) + 1);
    }
  }
  const batches = Object.fromEntries(
    countries.map((c) => [c, [...(byTime[c] ?? new Map<number, number>())].map(([t, items]) => ({ t, items })).sort((a, b) => a.t - b.t)]),
  );
  timings.runS = (Date.now() - started) / 1000;
  return {
    scenario: s,
    prefix,
    database: db.name,
    env,
    tSched,
    firstCall,
    window: { from: from.t, to: to.t },
    readings: { start, from, to },
    margins,
    batches,
    remaining,
    placement,
    nodes,
    watched,
    warnings,
    timings,
    simPriority,
  };
}
