/**
 * What bench:tenants reports of each run beside its figures: where the calls went (permits per
 * class, waits, lag, queue depths), what the processes cost, and the raw outcomes of the clients,
 * so that a missed target can be read from the result file alone.
 */
import type { Readings } from './product-processes.js';
import { round } from './result.js';
import { mean, percentile } from './stats.js';
import { latenciesInWindow, refreshesInWindow, throughputInWindow, webhookDelays } from './tenants-measures.js';
import type { RunData } from './tenants-run.js';
import { meanBetween, permitsBetween } from './upstream-probe.js';

/** A percentile that may be Infinity (a delivery that never came) reads as null: no finite value to show. */
export function finite(v: number | null): number | null {
  return v === null || !Number.isFinite(v) ? null : v;
}

/** CPU share of a core per process between two readings. */
function cpuShares(a: Readings, b: Readings, seconds: number): Record<string, number | null> {
  return Object.fromEntries(
    Object.entries(b.procs).map(([name, after]) => {
      const before = a.procs[name];
      return [name, before && after ? round((after.cpuS - before.cpuS) / seconds, 3) : null];
    }),
  );
}

function upstreamLatencyMs(a: Readings, b: Readings): number | null {
  const n = b.workers.latencyCount - a.workers.latencyCount;
  return n > 0 ? ((b.workers.latencySumS - a.workers.latencySumS) / n) * 1_000 : null;
}

/** p50 and p99 (ms) and statuses of the requests sent within the window; null when none was. */
function latencySummary(samples: RunData['heavyUpdates'], w: RunData['window']): Record<string, unknown> | null {
  const l = latenciesInWindow(samples, w);
  return l.ms.length ? { p50Ms: percentile(l.ms, 50), p99Ms: percentile(l.ms, 99), statuses: l.statuses } : null;
}

/** Mean jobs pending (waiting, prioritized, active) per country and queue class over the window's looks. */
function meanPending(run: RunData): Record<string, Record<string, number>> {
  const looks = run.backlog.filter((b) => b.t >= run.window.from && b.t < run.window.to);
  const out: Record<string, Record<string, number>> = {};
  for (const look of looks)
    for (const [country, classes] of Object.entries(look.jobs))
      for (const [cls, n] of Object.entries(classes)) (out[country] ??= {})[cls] = (out[country]?.[cls] ?? 0) + n / looks.length;
  for (const classes of Object.values(out)) for (const cls of Object.keys(classes)) classes[cls] = round(classes[cls]!, 1);
  return out;
}

/** The mean to a tenth, null without samples. */
function meanTo01(xs: readonly number[]): number | null {
  const m = mean(xs);
  return m === null ? null : round(m, 1);
}

/** Mean gap between one product's consecutive refreshes in the window (s), over the light products of each priority. */
function lightPeriods(run: RunData): { p0: number | null; p1: number | null } {
  const times = new Map<string, number[]>();
  for (const c of run.refreshes) {
    if (c.at < run.window.from || c.at >= run.window.to) continue;
    const rv = c.returnvalue as { asins?: string[]; deferred?: boolean } | null;
    if (!rv?.asins || rv.deferred) continue;
    for (const a of rv.asins) if (run.lightAsins.has(a)) times.set(`${c.queue} ${a}`, [...(times.get(`${c.queue} ${a}`) ?? []), c.at]);
  }
  const gaps = { p0: [] as number[], p1: [] as number[] };
  for (const [asin, ts] of times) {
    ts.sort((a, b) => a - b);
    for (let i = 1; i < ts.length; i++) (run.lightP1Asins.has(asin.split(' ')[1]!) ? gaps.p1 : gaps.p0).push((ts[i]! - ts[i - 1]!) / 1_000);
  }
  return { p0: meanTo01(gaps.p0), p1: meanTo01(gaps.p1) };
}

/** How many samples fall under each bound (and past the last), e.g. { '≤20.5': n, …, '>119.5': n }. */
function histogram(xs: readonly number[], bounds: readonly number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const b of bounds) out[`≤${b}`] = 0;
  out[`>${bounds.at(-1)}`] = 0;
  for (const x of xs) {
    const b = bounds.find((v) => x <= v);
    out[b === undefined ? `>${bounds.at(-1)}` : `≤${b}`]!++;
  }
  return out;
}

export function runDetails(run: RunData): Record<string, unknown> {
  const { start, end, fairStart, fairEnd } = run.readings;
  const windowS = (run.window.to - run.window.from) / 1_000;
  const heavyStatuses: Record<string, number> = {};
  for (const s of run.heavyUpdates) heavyStatuses[s.status] = (heavyStatuses[s.status] ?? 0) + 1;
  return {
    timings: run.timings,
    windowSeconds: round(windowS, 1),
    refreshes: refreshesInWindow(run),
    permitsInWindow: permitsBetween(start.workers, end.workers),
    permitsInFairness: fairStart && fairEnd ? permitsBetween(fairStart.workers, fairEnd.workers) : null,
    permitWaitInWindow: meanBetween(start.workers.permitWait, end.workers.permitWait),
    refreshLagInWindow: meanBetween(start.workers.refreshLag, end.workers.refreshLag),
    // Period = planned interval + the wait to be planned and run: which of them the heavy account moves.
    lightPeriodMeanS: lightPeriods(run),
    lightPlannedIntervalsP0: histogram(run.lightIntervalsS.p0, [20.5, 30, 60, 119.5]),
    lightChangeRateMedianPerHour: finite(percentile(run.lightRates, 50)),
    policies: run.policies,
    lightPlannedIntervalMeanS: {
      p0: meanTo01(run.lightIntervalsS.p0),
      p1: meanTo01(run.lightIntervalsS.p1),
    },
    meanJobsPendingInWindow: meanPending(run),
    simulatorCallsByOperation: Object.fromEntries(Object.entries(end.sim).map(([c, s]) => [c, s.byOperation])),
    // The client's own timer runs from before the permit wait: a call's time as a job sees it.
    upstreamCallMeanMsWithPermitWait: finite(upstreamLatencyMs(start, end)),
    simulatorLatencyProbeMs: run.upstreamLatencyMs.map((x) => round(x, 1)),
    throughput: throughputInWindow(run),
    throughputInFairness: throughputInWindow(run, 'fair'),
    cpuShareOfACoreInWindow: cpuShares(start, end, windowS),
    peakRssMiB: Object.fromEntries(Object.entries(end.procs).map(([n, s]) => [n, s ? round(s.peakRssMiB, 1) : null])),
    lightForcedUpdates: latenciesInWindow(run.lightUpdates, run.window).statuses,
    heavyForcedUpdatesWholeRun: heavyStatuses,
    heavyForcedUpdatesInWindow: latencySummary(run.heavyUpdates, run.window),
    webhooks: { ...webhookDelays(run), ms: undefined, receiver: run.receiver.counts },
    lightAlerts: run.lightAlerts.length,
    lightAlertMeanChangeIntervalS: round((mean(run.lightAlerts.map((a) => a.meanIntervalMs)) ?? 0) / 1_000, 1),
    importsStarted: run.importOwners.size,
    importRefusals: run.importRefusals,
    importAccountsOutOfCodes: run.importExhausted,
    warnings: run.warnings,
  };
}
