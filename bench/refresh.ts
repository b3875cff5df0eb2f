/**
 * Refresh throughput against the quota limit, with the forced-update load
 * of benchmark 2 running during it (see update.ts).
 *
 * N watched ASINs (20 % priority 1), tracked in every country, all due at once; the simulator with
 * a quota of Q calls a second per country; the real scheduler, two workers and the api as separate
 * processes started with the CLI, for T seconds. The physical limit is 10 ASINs a call × Q × countries.
 * With `--mongo-log PATH` (a MongoDB logging slow queries: mongod, or the stand-in started with
 * `--slowms 50`, whose log is /tmp/mongo-emulator-PORT.log) it counts the window's commands that
 * examined more than 1,000 keys or documents.
 */
import { metricsText, mongoRoundTrips } from './lib/metrics-text.js';
import { pathToFileURL } from 'node:url';
import { generateAppKey, parseAppKey } from '../config/app-key.js';
import { UserService } from '../src/users/service.js';
import { registerModels } from '../src/models/index.js';
import { parseBenchArgs, type BenchOptions } from './lib/args.js';
import {
  productEnv,
  withOwnCleanup,
  environmentOf,
  ownDatabase,
  ownRedis,
  monitorClientCommands,
  redisCommandCount,
  runMain,
  uniqueName,
  type Infra,
} from './lib/infra.js';
import { sampleProc, spawnCli, type Child, type ProcSample } from './lib/proc.js';
import { figure, report, round, type BenchResult, type Figure } from './lib/result.js';
import { asinOf, insertChunks, priorityOf, productDoc, watchDoc } from './lib/seed.js';
import { max, mean, percentile } from './lib/stats.js';
import { forcedUpdate, startUpdateLoad, type UpdateSample } from './lib/update-load.js';
import { readSlowLog } from './lib/slow-log.js';

const ITEMS_PER_CALL = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface StatsSample {
  readonly t: number;
  /** getItems calls the simulator received, and the items it found (not-found ASINs excluded). */
  readonly calls: number;
  readonly found: number;
  /** ASINs the workers asked for, and their getItems calls answered (their /metrics). */
  readonly asked: number;
  readonly okCalls: number;
  readonly throttled: number;
  readonly errors: number;
}

/** getItems calls and items, and 429s / errors of every operation, summed over the countries. */
async function simStats(simUrl: string): Promise<Pick<StatsSample, 'calls' | 'found' | 'throttled' | 'errors'>> {
  const res = await fetch(`${simUrl}/__stats`, { signal: AbortSignal.timeout(5_000) });
  const body = (await res.json()) as {
    countries: Record<string, Record<string, { calls: number; items: number; throttled: number; errors: number }>>;
  };
  let calls = 0,
    found = 0,
    throttled = 0,
    errors = 0;
  for (const ops of Object.values(body.countries)) {
    for (const [op, s] of Object.entries(ops)) {
      throttled += s.throttled;
      errors += s.errors;
      if (op === 'getItems') {
        calls += s.calls;
        found += s.items;
      }
    }
  }
  return { calls, found, throttled, errors };
}

/**
 * ASINs asked and getItems calls answered, from the workers' own counters: the simulator counts
 * only the items it found, but a not-found ASIN is refreshed too (its status is recorded).
 */
async function workerStats(metricsUrls: readonly string[]): Promise<Pick<StatsSample, 'asked' | 'okCalls'>> {
  let asked = 0;
  let okCalls = 0;
  for (const url of metricsUrls) {
    const text = await metricsText(url);
    for (const m of text.matchAll(/^shelfwatch_upstream_items_total\{[^}]*\} (\S+)$/gm)) asked += Number(m[1]);
    for (const m of text.matchAll(/^shelfwatch_upstream_calls_total\{([^}]*)\} (\S+)$/gm)) {
      if (m[1]!.includes('operation="getItems"') && m[1]!.includes('result="ok"')) okCalls += Number(m[2]);
    }
  }
  return { asked, okCalls };
}

async function sampleStats(simUrl: string, metricsUrls: readonly string[]): Promise<StatsSample> {
  const [sim, workers] = await Promise.all([simStats(simUrl), workerStats(metricsUrls)]);
  return { t: Date.now(), ...sim, ...workers };
}

interface ProcWindow {
  readonly name: string;
  readonly pid: number;
  readonly before: ProcSample | null;
  after: ProcSample | null;
}

function procFigures(windows: readonly ProcWindow[], seconds: number): { figures: Figure[]; details: Record<string, unknown> } {
  const figures: Figure[] = [];
  const details: Record<string, unknown> = {};
  for (const w of windows) {
    const cpu = w.before && w.after ? w.after.cpuS - w.before.cpuS : null;
    figures.push(
      figure(`CPU s in window: ${w.name}`, cpu, 's', null, cpu === null ? undefined : `${round((cpu / seconds) * 100, 1)} % of a core`),
    );
    figures.push(figure(`peak RSS: ${w.name}`, w.after?.peakRssMiB ?? null, 'MiB'));
    details[w.name] = {
      pid: w.pid,
      cpuSecondsInWindow: cpu === null ? null : round(cpu, 2),
      cpuSecondsTotal: w.after ? round(w.after.cpuS, 2) : null,
      peakRssMiB: w.after ? round(w.after.peakRssMiB, 1) : null,
    };
  }
  return { figures, details };
}

export interface RefreshOutcome {
  readonly refresh: BenchResult;
  readonly update: BenchResult;
}

/** Runs the benchmark and removes everything it started and wrote, also when it fails. */
export function benchRefresh(opts: BenchOptions, inf?: Infra): Promise<RefreshOutcome> {
  return withOwnCleanup(inf, (infra) => measureRefresh(opts, infra));
}

async function measureRefresh(opts: BenchOptions, inf: Infra): Promise<RefreshOutcome> {
  const startedAt = new Date().toISOString();
  const notes: string[] = [];
  const countries = opts.countries;
  const limit = ITEMS_PER_CALL * opts.quota * countries.length;

  // ---- data: N watched ASINs in every country, all due one second ago --------------------------
  const db = await ownDatabase(inf, 'sw_bench_refresh');
  const prefix = uniqueName('swb_refresh');
  const redis = await ownRedis(inf, prefix);
  registerModels(db.conn);
  await Promise.all(Object.values(db.conn.models).map((m) => m.createIndexes()));
  const appKeyText = generateAppKey();
  const { user, token } = await new UserService(db.conn, parseAppKey(appKeyText)!).create({
    name: 'bench',
    email: 'bench@bench.example.com',
  });
  const due = new Date(Date.now() - 1_000);
  const asins = Array.from({ length: opts.asins }, (_, i) => asinOf(i));
  const seedStart = Date.now();
  await insertChunks(db.conn, 'watches', asins.length, (i) => watchDoc(user._id, asins[i]!, priorityOf(i, opts.p1Share), due));
  for (const country of countries) {
    await insertChunks(db.conn, 'products', asins.length, (i) =>
      productDoc({ country, asin: asins[i]!, priority: priorityOf(i, opts.p1Share), nextRefreshAt: due, createdAt: due }),
    );
  }
  const seedS = (Date.now() - seedStart) / 1000;
  console.log(`refresh: seeded ${asins.length} watched ASINs × ${countries.length} countries in ${round(seedS, 1)} s`);

  // ---- processes: simulator, two workers, api, then the scheduler (its first plan starts the run)
  const env: Record<string, string> = {
    ...productEnv(inf, db, prefix, appKeyText, countries),
    QUOTA_RPS: String(opts.quota),
    // The daily quota is not what this benchmark measures: large enough that the planner's
    // spreading of the day's rest never lowers the per-second rate.
    QUOTA_PER_DAY: '1000000000',
    SHUTDOWN_TIMEOUT_MS: '8000',
    WORKER_SHUTDOWN_MS: '3s',
  };
  const sim = spawnCli('simulator', ['simulator'], {
    ...env,
    SIMULATOR_QUOTA_RPS: String(opts.quota),
    SIMULATOR_QUOTA_PER_DAY: '1000000000',
    SIMULATOR_FAULTS: JSON.stringify({ latencyMs: opts.latencyMs }),
  });
  const simUrl = String((await sim.waitForLog((l) => l.msg === 'upstream simulator listening')).url);
  const withSim = { ...env, SIMULATOR_URL: simUrl };
  // METRICS_PORT=0: each worker serves /metrics on a free port, read for the ASINs it asked for.
  const workers = [1, 2].map((i) => spawnCli(`worker-${i}`, ['worker'], { ...withSim, METRICS_PORT: '0' }));
  const metricsUrls = (await Promise.all(workers.map((w) => w.waitForLog((l) => l.msg === 'metrics and health listening')))).map((l) =>
    String(l.url),
  );
  const api = spawnCli('api', ['api'], {
    ...withSim,
    PORT: '0',
    RATE_LIMIT_API: '1000000',
    RATE_LIMIT_UPDATE: '1000000',
    METRICS_PORT: '0',
  });
  // Both lines are waited for at once: a child's lines are only matched while someone waits.
  const [apiListening, apiOps] = await Promise.all([
    api.waitForLog((l) => l.msg === 'api listening'),
    api.waitForLog((l) => l.msg === 'metrics and health listening'),
  ]);
  const apiUrl = String(apiListening.url);
  const apiMetrics = String(apiOps.url);

  // One forced update per country before the clock starts: it opens the api's queue-events
  // connection and the workers' upstream tokens, one-time costs that are not a forced update's.
  const warmTouched = new Set<string>();
  for (const country of countries) {
    const sample = asins.slice(-10);
    for (const a of sample) warmTouched.add(`${country}:${a}`);
    const s = await forcedUpdate(apiUrl, token, country, sample, 30_000);
    if (s.status !== 200) notes.push(`warm-up forced update in ${country} answered ${s.status}`);
  }

  const scheduler = spawnCli('scheduler', ['scheduler'], { ...env, METRICS_PORT: '0' });
  const children: Child[] = [sim, ...workers, api, scheduler];
  const [schedulerOps] = await Promise.all([
    scheduler.waitForLog((l) => l.msg === 'metrics and health listening'),
    scheduler.waitForLog((l) => l.msg === 'scheduler started'),
  ]);
  const schedulerMetrics = String(schedulerOps.url);
  // Every product process's MongoDB round trips: the workers', the api's (forced updates) and the scheduler's.
  const productMetrics = [...metricsUrls, apiMetrics, schedulerMetrics];

  // ---- the measured window ---------------------------------------------------------------------
  const watched: { name: string; pid: number }[] = children.map((c) => ({ name: c.name, pid: c.pid }));
  if (inf.mongoPid) watched.push({ name: `mongodb (${inf.mongoIsEmulator ? 'stand-in' : 'mongod'})`, pid: inf.mongoPid });
  if (inf.redisPid) watched.push({ name: 'redis-server', pid: inf.redisPid });
  const windows: ProcWindow[] = watched.map((w) => ({ ...w, before: sampleProc(w.pid), after: null }));
  const t0 = Date.now();
  const cmd0 = await redisCommandCount(redis);
  const clientCommands = await monitorClientCommands(inf.redisUrl);
  const mongo0 = await mongoRoundTrips(productMetrics);
  const samples: StatsSample[] = [await sampleStats(simUrl, metricsUrls)];
  const load = startUpdateLoad({ apiUrl, token, asins, countries });
  const end = t0 + opts.seconds * 1000;
  while (Date.now() < end) {
    await sleep(Math.min(1_000, Math.max(0, end - Date.now())));
    samples.push(await sampleStats(simUrl, metricsUrls));
  }
  const tEnd = Date.now();
  const slowLog = opts.mongoLog ? await readSlowLog(opts.mongoLog, db.name, t0, tEnd) : null;
  const cmd1 = await redisCommandCount(redis);
  const sent = await clientCommands.stop();
  const mongo1 = await mongoRoundTrips(productMetrics);
  const mongoByProcess = Object.fromEntries(
    Object.entries(mongo1)
      .map(([k, v]) => [k, v - (mongo0[k] ?? 0)])
      .filter(([, v]) => Number(v) > 0),
  );
  const mongoTrips = Object.values(mongoByProcess).reduce((n: number, v) => n + Number(v), 0);
  for (const w of windows) w.after = sampleProc(w.pid);
  const updates: UpdateSample[] = await load.stop(5_000);
  const warnings = Object.fromEntries(children.map((c) => [c.name, Object.fromEntries(c.warnings)]));
  // Stop the product before reading MongoDB, so the reads do not compete with it.
  await Promise.all(children.map((c) => c.stop()));

  // ---- figures from the simulator's counters -------------------------------------------------
  const first = samples[0]!;
  const last = samples[samples.length - 1]!;
  const windowS = (tEnd - t0) / 1000;
  const items = last.asked - first.asked;
  const calls = last.okCalls - first.okCalls;
  const found = last.found - first.found;
  // "Once a backlog exists": from the first upstream call plus a short warm-up (workers filling
  // their concurrency, the first plan's enqueue) to the end.
  const firstCall = samples.find((s) => s.okCalls > first.okCalls);
  const warmupMs = Math.min(5_000, (opts.seconds * 1000) / 4);
  const steadyFrom = firstCall ? samples.find((s) => s.t >= firstCall.t + warmupMs) : undefined;
  const steadyRate = steadyFrom && last.t > steadyFrom.t ? (last.asked - steadyFrom.asked) / ((last.t - steadyFrom.t) / 1000) : null;

  // ---- figures from MongoDB: who was refreshed when ------------------------------------------
  const touched = new Set([...warmTouched, ...load.touched]);
  const refreshed = (await db.conn
    .db!.collection('products')
    .find({ last_attempt_at: { $ne: null } }, { projection: { _id: 0, country: 1, asin: 1, priority: 1, last_attempt_at: 1 } })
    .toArray()) as unknown as { country: string; asin: string; priority: 0 | 1; last_attempt_at: Date }[];
  const p1Total = asins.filter((_, i) => priorityOf(i, opts.p1Share) === 1).length * countries.length;
  const p1Waits: number[] = [];
  const p0Waits: number[] = [];
  let inversions = 0;
  let p1Refreshed = 0;
  let p1Scheduled = 0;
  let overlapMs = 0;
  let rodeAlong = 0;
  for (const country of countries) {
    const mine = refreshed.filter(
      (p) => p.country === country && p.last_attempt_at.getTime() <= tEnd && !touched.has(`${country}:${p.asin}`),
    );
    const p1 = mine.filter((p) => p.priority === 1).map((p) => p.last_attempt_at.getTime());
    // A batch writes one time on all its products: priority-0 products written at a priority-1
    // product's time rode in a priority-1 batch (the planner fills the last one's call with the
    // first priority-0 products) and started as it did. Only priority-0 batches' starts count.
    const p1Batches = new Set(p1);
    const p0 = mine.filter((p) => p.priority === 0).map((p) => p.last_attempt_at.getTime());
    const p0Alone = p0.filter((t) => !p1Batches.has(t));
    rodeAlong += p0.length - p0Alone.length;
    // Waits count from the scheduler's start: every product was due before it, and the time spent
    // starting processes is not a wait the scheduler could shorten.
    p1Waits.push(...p1.map((t) => (t - t0) / 1000));
    p0Waits.push(...p0.map((t) => (t - t0) / 1000));
    p1Refreshed += p1.length;
    const p1Here = asins.filter((a, i) => priorityOf(i, opts.p1Share) === 1 && !touched.has(`${country}:${a}`)).length;
    p1Scheduled += p1Here;
    // A priority-0 product refreshed while some priority-1 product was still waiting is out of order.
    const lastP1 = p1.length === p1Here ? (max(p1) ?? -Infinity) : Infinity;
    inversions += p0Alone.filter((t) => t < lastP1).length;
    const firstP0 = p0Alone.length ? Math.min(...p0Alone) : Infinity;
    if (Number.isFinite(lastP1) && lastP1 > firstP0) overlapMs = Math.max(overlapMs, lastP1 - firstP0);
  }
  const p1Wait = percentile(p1Waits, 50);
  const p0Wait = percentile(p0Waits, 50);
  const procs = procFigures(windows, windowS);

  const refreshFigures: Figure[] = [
    figure('refreshed ASINs/s once a backlog exists', steadyRate, 'ASIN/s', { op: '>=', value: 0.99 * limit, source: 'issue' }),
    figure('share of the physical limit 10×Q×countries', steadyRate === null ? null : steadyRate / limit, '', {
      op: '>=',
      value: 0.99,
      source: 'issue',
    }),
    figure('refreshed ASINs/s over the whole window', items / windowS, 'ASIN/s', null, 'includes the start of the first plan'),
    figure('average batch fill (ASINs per getItems call)', calls ? items / calls : null, 'ASIN', { op: '>=', value: 9.9, source: 'issue' }),
    figure(
      'found items per call (simulator view)',
      calls ? found / calls : null,
      'items',
      null,
      'not-found and inaccessible ASINs (~6 %) excluded',
    ),
    figure('upstream 429s', last.throttled - first.throttled, '', { op: '==', value: 0, source: 'issue' }),
    figure('upstream errors (non-2xx, non-429)', last.errors - first.errors, ''),
    figure(
      'priority-0 started while a priority-1 waited',
      inversions,
      'products',
      { op: '==', value: 0, source: 'issue' },
      [
        'products of priority-0 batches',
        overlapMs > 0 ? `last p1 and first p0 batch overlap by ${Math.round(overlapMs)} ms` : '',
        rodeAlong ? `${rodeAlong} priority-0 products rode in priority-1 batches` : '',
      ]
        .filter(Boolean)
        .join('; '),
    ),
    figure(
      'priority-1 refreshed within T',
      p1Refreshed,
      'products',
      { op: '==', value: p1Scheduled, source: 'ours' },
      `of ${p1Scheduled} not force-updated (${p1Total} in all)`,
    ),
    figure('priority-1 wait p50 (from the scheduler start)', p1Wait, 's'),
    figure('priority-1 wait max', max(p1Waits), 's'),
    figure('priority-0 wait p50 (of those refreshed)', p0Wait, 's', null, `${p0Waits.length} priority-0 refreshed`),
    figure('priority-1 / priority-0 median wait', p1Wait !== null && p0Wait ? p1Wait / p0Wait : null, '', {
      op: '<=',
      value: 1,
      source: 'ours',
    }),
    figure(
      'Redis commands per refreshed ASIN',
      items ? sent.total / items : null,
      'cmd/ASIN',
      { op: '<=', value: 3, source: 'issue' },
      `what the product's processes send (MONITOR, scripts' own commands left out)${inf.redisSource === 'REDIS_URL' ? '; shared Redis: counts other clients too' : ''}: ${JSON.stringify(Object.fromEntries(Object.entries(sent.byCommand).slice(0, 8)))}`,
    ),
    figure(
      "Redis commands run per refreshed ASIN, scripts' included",
      items ? (cmd1 - cmd0) / items : null,
      'cmd/ASIN',
      null,
      "INFO commandstats: every command a Lua script (BullMQ's, the governor's) runs counts",
    ),
    figure(
      'MongoDB round trips per refreshed ASIN',
      items ? mongoTrips / items : null,
      'cmd/ASIN',
      { op: '<=', value: 0.5, source: 'issue' },
      `every product process's commands (shelfwatch_mongo_commands_total), the forced updates' included, by process: ${JSON.stringify(mongoByProcess)}`,
    ),
    slowLog
      ? figure(
          'MongoDB commands that examined > 1,000 keys or documents',
          slowLog.unbounded.length,
          'cmd',
          { op: '==', value: 0, source: 'issue' },
          `in the window, of ${slowLog.slow} slow ones in ${opts.mongoLog}; slowest: ${slowLog.slowest
            .map((c) => `${c.command} ${c.collection} ${c.plan ?? ''} ${c.keysExamined}k/${c.docsExamined}d ${c.ms} ms`)
            .join(', ')}`,
        )
      : figure(
          'MongoDB commands that examined > 1,000 keys or documents',
          null,
          'cmd',
          null,
          'run with --mongo-log PATH (a slow-query log)',
        ),
    ...procs.figures,
  ];
  // A database server busy most of the window is what limited the run, not the quota.
  for (const w of windows.filter((x) => x.name.startsWith('mongodb') && x.before && x.after)) {
    const share = (w.after!.cpuS - w.before!.cpuS) / windowS;
    if (share > 0.8)
      notes.push(`${w.name} was busy ${Math.round(share * 100)} % of the window (one core): it, not the quota, limited this run`);
  }
  if (inf.mongoIsEmulator) {
    notes.push(
      `MongoDB is the wire-protocol stand-in (${inf.mongoVersion}): its plans use the same indexes as mongod's, but every command runs on one JavaScript thread, so a command's latency under this load (and the forced updates' with it) is several times mongod's`,
    );
  }
  const environment = environmentOf(inf);
  const refresh: BenchResult = {
    name: 'refresh',
    startedAt,
    environment,
    parameters: {
      asins: opts.asins,
      countries,
      quota: opts.quota,
      p1Share: opts.p1Share,
      seconds: opts.seconds,
      simulatorLatencyMs: opts.latencyMs,
      physicalLimit: limit,
    },
    figures: refreshFigures,
    details: {
      windowSeconds: round(windowS, 2),
      seedSeconds: round(seedS, 1),
      upstream: {
        calls,
        asked: items,
        found,
        simulatorCalls: last.calls - first.calls,
        steadyFromSecond: steadyFrom ? round((steadyFrom.t - t0) / 1000, 1) : null,
      },
      redisCommands: cmd1 - cmd0,
      redisClientCommands: sent,
      mongoCommands: mongoByProcess,
      productsRefreshedInWindow: refreshed.filter((p) => p.last_attempt_at.getTime() <= tEnd).length,
      perSecond: samples.slice(1).map((s, i) => ({ t: round((s.t - t0) / 1000, 1), asins: s.asked - samples[i]!.asked })),
      processes: procs.details,
      warnings,
      avgMeanWaitS: { p1: mean(p1Waits), p0: mean(p0Waits) },
    },
    notes,
  };

  // ---- benchmark 2: forced updates during this run --------------------------------------------
  const lat = updates.map((u) => u.latencyMs);
  const targetMs = 1000 / opts.quota + opts.latencyMs + 50;
  const notOk = updates.filter((u) => u.status !== 200);
  const update: BenchResult = {
    name: 'update',
    startedAt,
    environment,
    parameters: {
      during: 'refresh',
      ratePerSecond: 1,
      asinsPerCall: 10,
      quota: opts.quota,
      simulatorLatencyMs: opts.latencyMs,
      seconds: opts.seconds,
    },
    figures: [
      figure('forced updates', updates.length, 'calls'),
      figure('forced-update latency p50', percentile(lat, 50), 'ms'),
      figure(
        'forced-update latency p99',
        percentile(lat, 99),
        'ms',
        { op: '<=', value: targetMs, source: 'issue' },
        `1/Q + ${opts.latencyMs} ms + 50 ms`,
      ),
      figure('forced-update latency max', max(lat), 'ms'),
      figure(
        'forced updates not answered 200',
        notOk.length,
        'calls',
        { op: '==', value: 0, source: 'ours' },
        notOk.length
          ? `statuses: ${JSON.stringify(Object.fromEntries([...new Set(notOk.map((u) => u.status))].map((s) => [s, notOk.filter((u) => u.status === s).length])))} (202: wait ran out, -1: unfinished at the end)`
          : undefined,
      ),
    ],
    details: { latenciesMs: lat.map((l) => Math.round(l)) },
    notes: inf.mongoIsEmulator
      ? [
          "MongoDB is the stand-in: a forced update's MongoDB round trips (claim, read, history, write, answer) wait behind the refresh's commands on its one thread",
        ]
      : [],
  };
  return { refresh, update };
}

/** As a program: `npm run bench:refresh -- --seconds 20 --asins 4000`. */
export async function mainRefresh(which: 'refresh' | 'update' | 'both'): Promise<void> {
  const opts = parseBenchArgs();
  // Set-up (seeding, starting five processes) plus the window, plus room for a slow stand-in.
  await runMain(which === 'update' ? 'update' : 'refresh', (opts.seconds + 600 + opts.asins / 50) * 1000, async () => {
    const out = await benchRefresh(opts);
    // Both are written to bench/results/; the script's own figure set comes last, so that its
    // last line is its RESULT.
    const order = which === 'update' ? [out.refresh, out.update] : [out.update, out.refresh];
    for (const r of order) await report(r);
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await mainRefresh('both');
