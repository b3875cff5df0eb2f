/**
 * bench:scale's measures of one run (lib/scale-run.ts), from its window's two readings and the
 * batches MongoDB recorded.
 *
 * Throughput from the pace: at Q = 1 a country makes about 60 calls in a 60 s window, so a count
 * in a fixed window is off by up to one call per country depending on where the window's edges
 * fall (±1.7 % at 2 countries, against a target of 0.99). Each country's rate is instead taken
 * between its first and last batch in the window: the ASINs of every batch after the first over
 * the time between them. Pauses at the window's edges, which that leaves out, show in the longest
 * gap (edges included). Counts in the fixed window are kept beside it, and are what the per-ASIN
 * costs (CPU, Redis commands) divide by.
 */
import type { Batch, RunData } from './scale-run.js';

export interface CountryMeasure {
  readonly master: string;
  readonly calls: number;
  readonly asins: number;
  /** Calls a second and ASINs a second from the pace (see above). */
  readonly callsPerS: number | null;
  readonly asinsPerS: number | null;
  /** The longest time without a batch in the window, its edges included (s). */
  readonly maxGapS: number;
  readonly remaining: number;
}

export interface ProcMeasure {
  readonly kind: string;
  readonly cpuS: number | null;
  readonly shareOfCore: number | null;
  readonly peakRssMiB: number | null;
}

export interface RunMeasures {
  readonly windowS: number;
  /** 10 ASINs a call × Q × countries. */
  readonly limit: number;
  readonly rate: number;
  readonly countedRate: number;
  readonly asinsInWindow: number;
  readonly calls: number;
  readonly fill: number | null;
  /** From the workers' /metrics in the window: ASINs asked per getItems call answered. */
  readonly fillFromCounters: number | null;
  /** 429s and other errors from the scheduler's start to the window's end (the simulator's /__stats). */
  /** Calls the simulator saw from the scheduler's start to the window's end (429s among them). */
  readonly upstreamCalls: number;
  readonly throttled: number;
  /** The same in the window only: the pace as it settled, without each country's first lessons. */
  readonly upstreamCallsInWindow: number;
  readonly throttledInWindow: number;
  readonly errors: number;
  readonly productCpuS: number;
  readonly cpuMsPerAsin: number | null;
  /** Every command the masters ran in the window (scripts' own included), and the replicas' separately. */
  readonly redisCommands: number;
  readonly replicaCommands: number;
  readonly redisPerAsin: number | null;
  readonly redisByCommand: Record<string, number>;
  readonly perNode: Record<string, { role: string; commands: number; shareOfMean: number | null }>;
  /** The busiest master's commands over the masters' mean (cluster), else null. */
  readonly maxMasterShare: number | null;
  readonly mongoPerAsin: number | null;
  readonly mongoByProcess: Record<string, number>;
  readonly machineBusy: number | null;
  readonly processes: Record<string, ProcMeasure>;
  readonly countries: Record<string, CountryMeasure>;
  readonly maxGapS: number;
  readonly backloggedCountries: number;
}

function countryMeasure(batches: readonly Batch[], from: number, to: number, master: string, remaining: number): CountryMeasure {
  const mine = batches.filter((b) => b.t >= from && b.t <= to);
  const asins = mine.reduce((n, b) => n + b.items, 0);
  const edges = [from, ...mine.map((b) => b.t), to];
  const maxGapS = Math.max(...edges.slice(1).map((t, i) => t - edges[i]!)) / 1000;
  if (mine.length < 2) return { master, calls: mine.length, asins, callsPerS: null, asinsPerS: null, maxGapS, remaining };
  const spanS = (mine[mine.length - 1]!.t - mine[0]!.t) / 1000;
  const after = asins - mine[0]!.items;
  return { master, calls: mine.length, asins, callsPerS: (mine.length - 1) / spanS, asinsPerS: after / spanS, maxGapS, remaining };
}

const sumValues = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0);

function diff(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(b)
      .map(([k, v]) => [k, v - (a[k] ?? 0)])
      .filter(([, v]) => Number(v) > 0),
  );
}

export function measureRun(run: RunData, quota: number): RunMeasures {
  const { from, to, start } = run.readings;
  const windowS = (to.t - from.t) / 1000;
  const countries = run.scenario.countries;
  const limit = 10 * quota * countries.length;
  const perCountry = Object.fromEntries(
    countries.map((c) => [c, countryMeasure(run.batches[c] ?? [], from.t, to.t, run.placement.countries[c] ?? '?', run.remaining[c] ?? 0)]),
  );
  const cm = Object.values(perCountry);
  const asinsInWindow = cm.reduce((n, c) => n + c.asins, 0);
  const calls = cm.reduce((n, c) => n + c.calls, 0);
  // A country with fewer than two batches in the window has no pace: its count stands in.
  const rate = cm.reduce((n, c) => n + (c.asinsPerS ?? c.asins / windowS), 0);

  let asked = 0;
  let okCalls = 0;
  for (const c of countries) {
    asked += (to.upstream[c]?.asked ?? 0) - (from.upstream[c]?.asked ?? 0);
    okCalls += (to.upstream[c]?.okCalls ?? 0) - (from.upstream[c]?.okCalls ?? 0);
  }
  let throttled = 0;
  let errors = 0;
  let upstreamCalls = 0;
  let throttledInWindow = 0;
  let upstreamCallsInWindow = 0;
  for (const [c, s] of Object.entries(to.sim)) {
    throttled += s.throttled - (start.sim[c]?.throttled ?? 0);
    errors += s.errors - (start.sim[c]?.errors ?? 0);
    upstreamCalls += s.calls - (start.sim[c]?.calls ?? 0);
    throttledInWindow += s.throttled - (from.sim[c]?.throttled ?? 0);
    upstreamCallsInWindow += s.calls - (from.sim[c]?.calls ?? 0);
  }

  const processes: Record<string, ProcMeasure> = {};
  let productCpuS = 0;
  for (const w of run.watched) {
    const a = from.procs[w.name];
    const b = to.procs[w.name];
    const cpuS = a && b ? b.cpuS - a.cpuS : null;
    if (w.kind === 'product') productCpuS += cpuS ?? 0;
    processes[w.name] = { kind: w.kind, cpuS, shareOfCore: cpuS === null ? null : cpuS / windowS, peakRssMiB: b?.peakRssMiB ?? null };
  }

  const masters = new Set(run.nodes.filter((n) => n.role === 'master').map((n) => n.addr));
  const byNode = Object.fromEntries(Object.entries(to.redis).map(([addr, cmds]) => [addr, diff(from.redis[addr] ?? {}, cmds)]));
  const redisByCommand: Record<string, number> = {};
  let redisCommands = 0;
  let replicaCommands = 0;
  for (const [addr, cmds] of Object.entries(byNode)) {
    if (!masters.has(addr)) {
      replicaCommands += sumValues(cmds);
      continue;
    }
    redisCommands += sumValues(cmds);
    for (const [k, v] of Object.entries(cmds)) redisByCommand[k] = (redisByCommand[k] ?? 0) + v;
  }
  const meanPerMaster = masters.size ? redisCommands / masters.size : 0;
  const perNode = Object.fromEntries(
    Object.entries(byNode).map(([addr, cmds]) => {
      const n = sumValues(cmds);
      const master = masters.has(addr);
      return [addr, { role: master ? 'master' : 'replica', commands: n, shareOfMean: master && meanPerMaster ? n / meanPerMaster : null }];
    }),
  );
  const shares = Object.values(perNode).flatMap((n) => (n.shareOfMean === null ? [] : [n.shareOfMean]));
  const mongoByProcess = diff(from.mongo, to.mongo);
  const busy = from.machine && to.machine ? (to.machine.busy - from.machine.busy) / (to.machine.total - from.machine.total) : null;

  return {
    windowS,
    limit,
    rate,
    countedRate: asinsInWindow / windowS,
    asinsInWindow,
    calls,
    fill: calls ? asinsInWindow / calls : null,
    fillFromCounters: okCalls ? asked / okCalls : null,
    throttled,
    upstreamCalls,
    throttledInWindow,
    upstreamCallsInWindow,
    errors,
    productCpuS,
    cpuMsPerAsin: asinsInWindow ? (productCpuS * 1000) / asinsInWindow : null,
    redisCommands,
    replicaCommands,
    redisPerAsin: asinsInWindow ? redisCommands / asinsInWindow : null,
    redisByCommand: Object.fromEntries(Object.entries(redisByCommand).sort((a, b) => b[1] - a[1])),
    perNode,
    maxMasterShare: masters.size > 1 && shares.length ? Math.max(...shares) : null,
    mongoPerAsin: asinsInWindow ? sumValues(mongoByProcess) / asinsInWindow : null,
    mongoByProcess,
    machineBusy: busy,
    processes,
    countries: perCountry,
    maxGapS: Math.max(0, ...cm.map((c) => c.maxGapS)),
    backloggedCountries: cm.filter((c) => c.remaining > 0).length,
  };
}
