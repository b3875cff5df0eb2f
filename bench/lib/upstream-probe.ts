/**
 * What the upstream side saw: the simulator's own counters (`GET /__stats`: calls per country and
 * operation, 429s), its ground truth (`GET /__truth`: how often a product changes), and the
 * workers' /metrics (permits the quota governor granted per class, upstream latency). Counters
 * only grow: a window's figure is the difference of two readings.
 */
import { metricsText } from './metrics-text.js';
import { loadConfig } from '../../config/env.js';
import type { Country } from '../../src/core/identifiers.js';
import { createUpstream } from '../../src/upstream/factory.js';

export interface CountryCalls {
  /** Every catalog call that named the country's marketplace, refused ones included. */
  readonly calls: number;
  readonly throttled: number;
  readonly errors: number;
  readonly byOperation: Readonly<Record<string, number>>;
}

type StatsBody = { countries: Record<string, Record<string, { calls: number; throttled: number; errors: number }>> };

export async function simulatorCalls(simUrl: string): Promise<Record<string, CountryCalls>> {
  const res = await fetch(`${simUrl}/__stats`, { signal: AbortSignal.timeout(5_000) });
  const body = (await res.json()) as StatsBody;
  const out: Record<string, CountryCalls> = {};
  for (const [country, ops] of Object.entries(body.countries)) {
    const byOperation: Record<string, number> = {};
    let calls = 0;
    let throttled = 0;
    let errors = 0;
    for (const [op, s] of Object.entries(ops)) {
      byOperation[op] = s.calls;
      calls += s.calls;
      throttled += s.throttled;
      errors += s.errors;
    }
    out[country] = { calls, throttled, errors, byOperation };
  }
  return out;
}

/** The mean interval between the product's changes, or null when the upstream does not have it (not found, not accessible). */
export async function meanChangeIntervalMs(simUrl: string, country: string, asin: string): Promise<number | null> {
  // A short span: only the product's rate is wanted, not its list of changes.
  const since = Date.now() - 60_000;
  const res = await fetch(`${simUrl}/__truth?country=${country}&asin=${asin}&since=${since}`, { signal: AbortSignal.timeout(5_000) });
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(`simulator /__truth answered ${res.status}`);
  return ((await res.json()) as { mean_interval_ms: number }).mean_interval_ms;
}

export interface WorkerCounters {
  /** Permits granted, per country and class, every worker together. */
  readonly permits: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Seconds callers waited for their permits, summed per class (every country), and how many. */
  readonly permitWait: Readonly<Record<string, { readonly sumS: number; readonly count: number }>>;
  /** How late planned refreshes ran (now minus due), summed per priority (every country), and how many. */
  readonly refreshLag: Readonly<Record<string, { readonly sumS: number; readonly count: number }>>;
  /** Upstream call time as the client's timer sees it (from before the permit wait): seconds summed and calls. */
  readonly latencySumS: number;
  readonly latencyCount: number;
}

/** Adds `_sum` and `_count` samples of a histogram or summary into `into`, keyed by one label. */
function sumsByLabel(text: string, metric: string, label: string, into: Record<string, { sumS: number; count: number }>): void {
  for (const m of text.matchAll(new RegExp(`^${metric}_(sum|count)\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
    const key = new RegExp(`${label}="([^"]+)"`).exec(m[2]!)?.[1];
    if (!key) continue;
    const row = (into[key] ??= { sumS: 0, count: 0 });
    if (m[1] === 'sum') row.sumS += Number(m[3]);
    else row.count += Number(m[3]);
  }
}

export async function workerCounters(metricsUrls: readonly string[]): Promise<WorkerCounters> {
  const permits: Record<string, Record<string, number>> = {};
  const permitWait: Record<string, { sumS: number; count: number }> = {};
  const refreshLag: Record<string, { sumS: number; count: number }> = {};
  let latencySumS = 0;
  let latencyCount = 0;
  for (const url of metricsUrls) {
    const text = await metricsText(url);
    for (const m of text.matchAll(/^shelfwatch_quota_permits_total\{([^}]*)\} (\S+)$/gm)) {
      const country = /country="([^"]+)"/.exec(m[1]!)?.[1];
      const cls = /class="([^"]+)"/.exec(m[1]!)?.[1];
      if (!country || !cls) continue;
      const row = (permits[country] ??= {});
      row[cls] = (row[cls] ?? 0) + Number(m[2]);
    }
    sumsByLabel(text, 'shelfwatch_quota_permit_wait_seconds', 'class', permitWait);
    sumsByLabel(text, 'shelfwatch_refresh_lag_seconds', 'priority', refreshLag);
    for (const m of text.matchAll(/^shelfwatch_upstream_latency_seconds_sum\{[^}]*\} (\S+)$/gm)) latencySumS += Number(m[1]);
    for (const m of text.matchAll(/^shelfwatch_upstream_latency_seconds_count\{[^}]*\} (\S+)$/gm)) latencyCount += Number(m[1]);
  }
  return { permits, permitWait, refreshLag, latencySumS, latencyCount };
}

/** Mean seconds of each key's samples between two readings. */
export function meanBetween(
  before: Readonly<Record<string, { readonly sumS: number; readonly count: number }>>,
  after: Readonly<Record<string, { readonly sumS: number; readonly count: number }>>,
): Record<string, { meanS: number | null; count: number }> {
  return Object.fromEntries(
    Object.entries(after).map(([k, a]) => {
      const n = a.count - (before[k]?.count ?? 0);
      return [k, { meanS: n > 0 ? (a.sumS - (before[k]?.sumS ?? 0)) / n : null, count: n }];
    }),
  );
}

/** `after − before` of each class's permits, per country. */
export function permitsBetween(before: WorkerCounters, after: WorkerCounters): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const [country, classes] of Object.entries(after.permits)) {
    out[country] = Object.fromEntries(Object.entries(classes).map(([cls, n]) => [cls, n - (before.permits[country]?.[cls] ?? 0)]));
  }
  return out;
}

/**
 * The simulator's latency as a call sees it, measured with the product's own client (token, wire
 * format) before any worker calls: `n` getItems calls of one ASIN, one at a time and spaced above
 * the simulator's pace, so none waits for quota. Returns each call's milliseconds.
 */
export async function probeUpstreamLatency(
  env: Record<string, string>,
  simUrl: string,
  country: Country,
  asin: string,
  n: number,
): Promise<number[]> {
  const port = createUpstream(loadConfig(env), country, { simulatorUrl: simUrl });
  try {
    await port.getItems([asin]); // the token request, once, is not a call's latency
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      await new Promise((r) => setTimeout(r, PROBE_GAP_MS));
      const started = performance.now();
      await port.getItems([asin]);
      out.push(performance.now() - started);
    }
    return out;
  } finally {
    await port.close();
  }
}

/** Gap between two probe calls: well above 1/Q of any quota the benchmark runs at. */
const PROBE_GAP_MS = 250;
