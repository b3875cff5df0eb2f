/**
 * Does the product keep the quota's pace, and its cost per ASIN, as countries grow and Redis
 * becomes a cluster? (`npm run bench:scale`)
 *
 * Each run is the real product started with the CLI (the simulator, N workers, the scheduler; no
 * api) on a database and a Redis prefix of its own, Q calls a second per country (the governor's
 * and the simulator's quota alike; the upstream's default is 1 call, 10 ASINs, a second), A watched
 * ASINs in every country all due at once, a warm-up from the first upstream call, then a window of
 * T seconds while every country is backlogged (lib/scale-run.ts). Runs (lib/scale-params.ts): a
 * series over the first k countries of COUNTRY_CODES on one Redis with 2 workers, then 21
 * countries on a local Redis Cluster (3 masters, 3 replicas) with 2 and 4 workers and on one Redis
 * with 4 workers. Figures per run (lib/scale-measures.ts): ASINs/s against 10·ΣQ, batch fill,
 * 429s, the product's CPU per ASIN and its ratio to the series' smallest run, Redis commands per
 * ASIN, and on the cluster each master's share of them.
 *
 * Flags: --series --redis --workers --asins --seconds --warmup --quota --latency --p1-share --pin,
 * --product-quota (the product's QUOTA_RPS when it should differ from the simulator's Q), --burst
 * (the simulator's bucket depth; a second's worth unless set, so one call at Q = 1) and --jitter
 * (ms each call may reach the simulator's bucket late), --sim-nice (the simulator's scheduling
 * priority, -10 unless set: see lib/scale-params.ts). Each run reports the pace margin each
 * country's governor settled at (src/quota/pace-margin.ts).
 */
import { pathToFileURL } from 'node:url';
import { environmentOf, getInfra, onCleanup, runMain, withOwnCleanup, type Infra } from './lib/infra.js';
import { productRevision } from './lib/product-revision.js';
import { figure, report, round, type BenchResult, type Figure } from './lib/result.js';
import { backlogSeconds, parseScaleArgs, scenariosOf, type ScaleParams, type Scenario } from './lib/scale-params.js';
import { clusterRedis, singleRedis, type RedisSide } from './lib/scale-redis.js';
import { runScale, type RunData } from './lib/scale-run.js';
import { measureRun, type RunMeasures } from './lib/scale-measures.js';

interface Done {
  readonly run: RunData;
  readonly m: RunMeasures;
}

const fmt = (v: number | null | undefined, digits = 2): string => (v === null || v === undefined ? 'n/a' : String(round(v, digits)));

/** Which master serves which countries and shared groups, one line per master. */
function placementText(run: RunData): string {
  const byMaster = new Map<string, string[]>();
  for (const [c, m] of Object.entries(run.placement.countries)) byMaster.set(m, [...(byMaster.get(m) ?? []), c]);
  for (const [g, m] of Object.entries(run.placement.shared)) byMaster.set(m, [...(byMaster.get(m) ?? []), g]);
  return [...byMaster]
    .sort()
    .map(([m, what]) => `${m}: ${what.join(' ')}`)
    .join('; ');
}

/** The bucket the simulator kept: its depth in calls (a second's worth unless --burst set it). */
function bucketOf(p: ScaleParams): number {
  return p.burst ?? p.quota;
}

/** Each country's settled margin (ms), and their mean and most. */
function marginsOf(run: RunData): { mean: number | null; max: number | null; byCountry: Record<string, number> } {
  const values = Object.values(run.margins);
  if (!values.length) return { mean: null, max: null, byCountry: run.margins };
  return { mean: values.reduce((a, b) => a + b, 0) / values.length, max: Math.max(...values), byCountry: run.margins };
}

function runFigures(d: Done, base: Done | undefined, p: ScaleParams): Figure[] {
  const { m, run } = d;
  const s = run.scenario;
  // The issue's targets: with a one-call bucket the pace must leave room for the jitter (0.97 of
  // 10·ΣQ, 0.98 up to 8 countries, 429s at most 0.5 % of calls); with a deeper bucket, 0.99 and none.
  const oneCall = bucketOf(p) === 1;
  const shareTarget = oneCall ? (s.countries.length <= 8 ? 0.98 : 0.97) : 0.99;
  const margins = marginsOf(run);
  const at = (name: string): string => `[${s.label}] ${name}`;
  const busiest = Object.entries(m.processes)
    .filter(([, x]) => x.shareOfCore !== null)
    .sort((a, b) => b[1].shareOfCore! - a[1].shareOfCore!)
    .slice(0, 3)
    .map(([n, x]) => `${n} ${round(x.shareOfCore! * 100, 0)} %`)
    .join(', ');
  const figs: Figure[] = [
    figure(at('refreshed ASINs/s in the window (pace)'), m.rate, 'ASIN/s', { op: '>=', value: shareTarget * m.limit, source: 'issue' }),
    figure(
      at('share of 10·ΣQ'),
      m.rate / m.limit,
      '',
      { op: '>=', value: shareTarget, source: 'issue' },
      `counted in the fixed window: ${fmt(m.countedRate / m.limit, 3)}`,
    ),
    figure(at('batch fill (ASINs per getItems call)'), m.fill, 'ASIN', { op: '>=', value: 9.9, source: 'issue' }),
    ...(oneCall
      ? [
          // The margin is learnt once per country and kept for days; the window is the pace it settled at.
          figure(
            at('upstream 429s ÷ upstream calls in the window'),
            m.upstreamCallsInWindow ? m.throttledInWindow / m.upstreamCallsInWindow : null,
            '',
            { op: '<=', value: 0.005, source: 'issue' },
            `${m.throttledInWindow} of ${m.upstreamCallsInWindow} calls`,
          ),
          figure(
            at('upstream 429s ÷ upstream calls from the start'),
            m.upstreamCalls ? m.throttled / m.upstreamCalls : null,
            '',
            null,
            `${m.throttled} of ${m.upstreamCalls} calls, from the scheduler start to the window end: each country's margin starts at 0 and learns the jitter from its first 429s`,
          ),
        ]
      : [
          figure(
            at('upstream 429s'),
            m.throttled,
            '',
            { op: '==', value: 0, source: 'issue' },
            'from the scheduler start to the window end',
          ),
        ]),
    figure(
      at('settled pace margin on top of 1/Q (most of the countries)'),
      margins.max,
      'ms',
      null,
      `mean ${fmt(margins.mean, 1)} ms; per country: ${Object.entries(margins.byCountry)
        .map(([c, v]) => `${c} ${fmt(v, 1)}`)
        .join(', ')}`,
    ),
    figure(
      at('countries still backlogged at the window end'),
      m.backloggedCountries,
      '',
      { op: '==', value: s.countries.length, source: 'ours' },
      `longest gap between one country's calls ${fmt(m.maxGapS)} s`,
    ),
    figure(
      at('product CPU per refreshed ASIN (workers + scheduler)'),
      m.cpuMsPerAsin,
      'ms',
      null,
      `machine ${fmt((m.machineBusy ?? NaN) * 100, 0)} % busy; busiest: ${busiest}`,
    ),
  ];
  if (base && base !== d) {
    figs.push(
      figure(
        at(`CPU per ASIN ÷ the ${base.run.scenario.countries.length}-country run's`),
        m.cpuMsPerAsin !== null && base.m.cpuMsPerAsin ? m.cpuMsPerAsin / base.m.cpuMsPerAsin : null,
        '',
        { op: '<=', value: 1.1, source: 'issue' },
      ),
    );
  }
  figs.push(
    figure(
      at('Redis commands per refreshed ASIN'),
      m.redisPerAsin,
      'cmd/ASIN',
      null,
      `INFO commandstats${s.redis === 'cluster' ? ', masters summed' : ''}: the commands Lua scripts run count too; ${JSON.stringify(Object.fromEntries(Object.entries(m.redisByCommand).slice(0, 6)))}`,
    ),
  );
  if (s.redis === 'cluster') {
    figs.push(
      figure(
        at("busiest master's commands ÷ the masters' mean"),
        m.maxMasterShare,
        '',
        s.countries.length >= 21 ? { op: '<=', value: 1.5, source: 'issue' } : null,
        placementText(run),
      ),
    );
  }
  return figs;
}

const COLUMNS = [
  'run',
  'ASIN/s',
  '÷10ΣQ',
  'fill',
  '429 (in window)',
  'margin ms',
  'CPU ms/ASIN',
  '÷base',
  'Redis cmd/ASIN',
  'max master÷mean',
  'machine busy',
  'max gap s',
] as const;

function table(done: readonly Done[], base: Done | undefined): string {
  const rows = done.map(({ run, m }) => [
    run.scenario.label,
    fmt(m.rate, 1),
    fmt(m.rate / m.limit, 3),
    fmt(m.fill, 2),
    `${m.throttled} (${m.throttledInWindow})`,
    fmt(marginsOf(run).mean, 1),
    fmt(m.cpuMsPerAsin, 3),
    base && base.m.cpuMsPerAsin && m.cpuMsPerAsin !== null ? fmt(m.cpuMsPerAsin / base.m.cpuMsPerAsin, 2) : 'n/a',
    fmt(m.redisPerAsin, 1),
    m.maxMasterShare === null ? '–' : fmt(m.maxMasterShare, 2),
    m.machineBusy === null ? 'n/a' : `${Math.round(m.machineBusy * 100)} %`,
    fmt(m.maxGapS, 1),
  ]);
  const all = [[...COLUMNS], ...rows];
  const widths = COLUMNS.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: readonly string[]) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [line(all[0]!), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

function runDetails(d: Done): Record<string, unknown> {
  const { run, m } = d;
  const r = (o: Record<string, number | null>) =>
    Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v === null ? null : round(v, 3)]));
  return {
    label: run.scenario.label,
    countries: run.scenario.countries,
    redis: run.scenario.redis,
    workers: run.scenario.workers,
    database: run.database,
    prefix: run.prefix,
    windowSeconds: round(m.windowS, 2),
    firstCallAfterSchedulerS: round((run.firstCall - run.tSched) / 1000, 1),
    timings: run.timings,
    simulatorPriority: run.simPriority,
    asinsInWindow: m.asinsInWindow,
    callsInWindow: m.calls,
    asinsPerSecondCounted: round(m.countedRate, 2),
    fillFromWorkerCounters: m.fillFromCounters === null ? null : round(m.fillFromCounters, 3),
    upstreamErrors: m.errors,
    upstreamCallsFromStart: m.upstreamCalls,
    settledMarginMs: Object.fromEntries(Object.entries(run.margins).map(([c, v]) => [c, round(v, 2)])),
    productCpuSecondsInWindow: round(m.productCpuS, 2),
    machineBusyShare: m.machineBusy === null ? null : round(m.machineBusy, 3),
    processes: Object.fromEntries(
      Object.entries(m.processes).map(([n, x]) => [
        n,
        { kind: x.kind, ...r({ cpuSecondsInWindow: x.cpuS, shareOfACore: x.shareOfCore, peakRssMiB: x.peakRssMiB }) },
      ]),
    ),
    redisCommands: {
      commandsOnMasters: m.redisCommands,
      commandsOnReplicas: m.replicaCommands,
      byCommand: m.redisByCommand,
      perNode: m.perNode,
      placement: run.placement,
    },
    mongo: { roundTripsPerAsin: m.mongoPerAsin === null ? null : round(m.mongoPerAsin, 3), byProcess: m.mongoByProcess },
    perCountry: Object.fromEntries(
      Object.entries(m.countries).map(([c, x]) => [
        c,
        { ...x, ...r({ callsPerS: x.callsPerS, asinsPerS: x.asinsPerS, maxGapS: x.maxGapS }) },
      ]),
    ),
    warnings: run.warnings,
  };
}

async function measureScale(p: ScaleParams, inf: Infra): Promise<{ result: BenchResult; table: string }> {
  const startedAt = new Date().toISOString();
  const t0 = Date.now();
  const revision = productRevision();
  const scenarios = scenariosOf(p);
  const notes: string[] = [];
  const need = p.warmupS + p.seconds + 15;
  if (backlogSeconds(p) < need)
    notes.push(
      `--asins ${p.asins} is ${round(backlogSeconds(p), 0)} s of work per country at Q = ${p.quota}: under the ${need} s of warm-up, window and start; countries may run dry`,
    );
  console.log(`scale: ${scenarios.length} runs: ${scenarios.map((s) => s.label).join('; ')}`);

  const single = singleRedis(inf);
  onCleanup('bench Redis connection', () => single.close());
  let cluster: RedisSide | undefined;
  let clusterOpen = false;
  const closeCluster = async (): Promise<void> => {
    if (clusterOpen) await cluster?.close();
    clusterOpen = false;
  };
  onCleanup('local Redis Cluster', closeCluster);
  const done: Done[] = [];
  for (const [i, s] of scenarios.entries()) {
    if (s.redis === 'cluster' && !cluster) {
      const t = Date.now();
      cluster = await clusterRedis();
      clusterOpen = true;
      console.log(`scale: local Redis Cluster up in ${round((Date.now() - t) / 1000, 1)} s`);
    }
    const side: RedisSide = s.redis === 'cluster' ? cluster! : single;
    console.log(`scale: run ${i + 1} of ${scenarios.length}: ${s.label}`);
    const run = await withOwnCleanup(inf, (x) => runScale(x, side, p, s));
    const m = measureRun(run, p.quota);
    done.push({ run, m });
    console.log(
      `scale: ${s.label}: ${fmt(m.rate, 1)} ASIN/s (${fmt(m.rate / m.limit, 3)} of 10·ΣQ), fill ${fmt(m.fill)}, 429s ${m.throttled} (${m.throttledInWindow} in the window), margin ${fmt(marginsOf(run).mean, 1)} ms, ${fmt(m.cpuMsPerAsin, 3)} CPU ms/ASIN, ${fmt(m.redisPerAsin, 1)} Redis cmd/ASIN${m.maxMasterShare === null ? '' : `, busiest master ${fmt(m.maxMasterShare)}× the mean`}`,
    );
    if (!scenarios.slice(i + 1).some((x: Scenario) => x.redis === 'cluster')) await closeCluster();
  }

  const base = done.find((d) => d.run.scenario.inSeries);
  const figures = done.flatMap((d) => runFigures(d, base, p));
  for (const { run, m } of done) {
    const busy = m.machineBusy;
    const cores = environmentOf(inf).cpus as number;
    if (busy !== null && busy > 0.9)
      notes.push(`${run.scenario.label}: the machine's ${cores} cores were ${Math.round(busy * 100)} % busy in the window`);
    // /proc/stat sees every process: what the run's own do not account for is someone else's load.
    const own = Object.values(m.processes).reduce((n, x) => n + (x.shareOfCore ?? 0), 0) / cores;
    if (busy !== null && busy - own > 0.15)
      notes.push(
        `${run.scenario.label}: processes other than this run's used ${Math.round((busy - own) * 100)} % of the machine in the window (the run's own: ${Math.round(own * 100)} %)`,
      );
    for (const [name, x] of Object.entries(m.processes))
      if (x.kind !== 'bench' && x.shareOfCore !== null && x.shareOfCore > 0.8)
        notes.push(`${run.scenario.label}: ${name} was busy ${Math.round(x.shareOfCore * 100)} % of a core in the window`);
  }
  const throttled = done.filter((d) => d.m.throttled > 0);
  if (throttled.length && p.quota === p.productQuota)
    notes.push(
      `429s in ${throttled.length} of ${done.length} runs: the simulator's bucket holds ${bucketOf(p)} call(s) at Q = ${p.quota}, so a call that reaches it less than 1/Q after the one before (timers, the event loop, the HTTP path${p.jitterMs ? `, ${p.jitterMs} ms of simulated jitter` : ''}) is answered 429 and tried again at the next start; each such 429 grows the country's pace margin, which then shrinks by 0.2 % of a step per start (the settled margins are in the figures; longest gap ${fmt(Math.max(...throttled.map((d) => d.m.maxGapS)), 1)} s)`,
    );
  const priorities = [...new Set(done.map((d) => d.run.simPriority))];
  notes.push(
    `the simulator's scheduling priority (nice): ${priorities.join('; ')}. It stands for a service on hosts of its own; ahead of the product's processes, a call that reaches it is read when it arrives, not when a core comes free (--sim-nice 0 leaves it as started)`,
  );
  if (inf.mongoIsEmulator)
    notes.push(`MongoDB is the wire-protocol stand-in (${inf.mongoVersion}): every process's commands run on its one JavaScript thread`);
  notes.push(
    "Redis commands are INFO commandstats deltas: the commands a Lua script runs (BullMQ, the quota governor) count as commands; on the cluster the masters are summed, the replicas (which replay the masters' writes) are in details",
  );
  if (inf.redisSource === 'REDIS_URL') notes.push('the single Redis is shared (REDIS_URL): its commandstats count other clients too');
  const revisionAtEnd = productRevision();
  if (JSON.stringify(revision) !== JSON.stringify(revisionAtEnd))
    notes.push('the product changed while this ran (parameters.product, productAtEnd): the runs may have measured different code');
  const wallS = (Date.now() - t0) / 1000;
  const result: BenchResult = {
    name: 'scale',
    startedAt,
    environment: environmentOf(inf),
    parameters: {
      product: revision,
      productAtEnd: revisionAtEnd,
      asinsPerCountry: p.asins,
      seconds: p.seconds,
      warmupSeconds: p.warmupS,
      quota: p.quota,
      productQuotaRps: p.productQuota,
      simulatorLatencyMs: p.latencyMs,
      simulatorBucketCalls: bucketOf(p),
      simulatorJitterMs: p.jitterMs,
      simulatorNice: p.simNice,
      p1Share: p.p1Share,
      pinnedWorkers: p.pin,
      runs: scenarios.map((s) => s.label),
    },
    figures,
    details: { wallSeconds: round(wallS, 0), runs: done.map(runDetails) },
    notes,
  };
  return { result, table: `${table(done, base)}\n(wall time ${Math.floor(wallS / 60)} min ${Math.round(wallS % 60)} s)` };
}

/** As a program: `npm run bench:scale -- --series 2 --redis single --workers 2 --seconds 15`. */
export async function mainScale(): Promise<void> {
  const p = parseScaleArgs();
  const runs = scenariosOf(p);
  // Per run: seeding, start-up, the first plan, warm-up and window, the stop; room for a slow stand-in.
  const budgetS = runs.reduce((n, s) => n + p.warmupS + p.seconds + 300 + (s.countries.length * p.asins) / 500, 120);
  await runMain('scale', budgetS * 1000, async () => {
    const inf = await getInfra();
    const { result, table: text } = await measureScale(p, inf);
    await report(result, text);
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await mainScale();
