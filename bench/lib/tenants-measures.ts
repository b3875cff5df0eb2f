/**
 * bench:tenants' numbers from one run's raw data (lib/tenants-run.ts): what the light accounts got,
 * what the countries spent, and how the import class was shared while everyone was backlogged.
 */
import type { TimedSample } from './tenant-updates.js';
import type { RunData, Window } from './tenants-run.js';

const inside = (t: number, w: Window): boolean => t >= w.from && t < w.to;
const minutes = (w: Window): number => (w.to - w.from) / 60_000;

export interface RefreshCount {
  /** Planned refreshes of light accounts' products in the window (a product refreshed twice counts twice). */
  readonly light: number;
  readonly heavy: number;
  /** Every ASIN planned batches refreshed, whoever owns it (crawled and imported products too). */
  readonly all: number;
  readonly batches: number;
  readonly lightPerMinute: number;
}

/**
 * Counts from the refresh queues' completed jobs: each returns the ASINs it refreshed (only those
 * that still held the plan's claim, plus any it claimed to fill the call), so a product counts
 * once per getItems call that carried it. Forced updates have their own queue and are not counted;
 * a batch that found the day spent (`deferred`) refreshed nothing.
 */
export function refreshesInWindow(run: RunData): RefreshCount {
  let light = 0;
  let heavy = 0;
  let all = 0;
  let batches = 0;
  for (const c of run.refreshes) {
    if (!inside(c.at, run.window)) continue;
    const rv = c.returnvalue as { asins?: string[]; deferred?: boolean } | null;
    if (!rv?.asins || rv.deferred) continue;
    batches++;
    all += rv.asins.length;
    for (const a of rv.asins) {
      if (run.lightAsins.has(a)) light++;
      else if (run.heavyAsins.has(a)) heavy++;
    }
  }
  return { light, heavy, all, batches, lightPerMinute: light / minutes(run.window) };
}

export interface Latencies {
  readonly ms: number[];
  readonly statuses: Record<string, number>;
}

/** Requests sent within the window: their latencies (of every answer, 200 or not) and statuses. */
export function latenciesInWindow(samples: readonly TimedSample[], w: Window): Latencies {
  const inWindow = samples.filter((s) => inside(s.startMs, w));
  const statuses: Record<string, number> = {};
  for (const s of inWindow) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
  return { ms: inWindow.map((s) => s.latencyMs), statuses };
}

export interface WebhookDelays {
  /** ms from the refresh that saw the change (its history point's time) to the receiver getting it; Infinity: never arrived. */
  readonly ms: number[];
  readonly arrived: number;
  readonly missing: number;
  readonly byStatus: Record<string, number>;
}

/** Light deliveries of the changes refreshes saw within the window. */
export function webhookDelays(run: RunData): WebhookDelays {
  const ms: number[] = [];
  const byStatus: Record<string, number> = {};
  let missing = 0;
  for (const d of run.lightDeliveries) {
    if (d.at === null || !inside(d.at, run.window)) continue;
    byStatus[d.status] = (byStatus[d.status] ?? 0) + 1;
    const arrival = run.receiver.arrivals.get(d.id);
    if (arrival === undefined) missing++;
    ms.push(arrival === undefined ? Infinity : arrival - d.at);
  }
  return { ms, arrived: ms.length - missing, missing, byStatus };
}

export interface CountryThroughput {
  readonly country: string;
  /** Upstream calls a second the simulator got in the window (every operation). */
  readonly callsPerSecond: number;
  readonly throttled: number;
  /** The fewest jobs pending (waiting, prioritized, active) in the country's queues at any look in the window. */
  readonly minPending: number | null;
}

/** Per country over the measured window, or over the fairness phase (`fair`). */
export function throughputInWindow(run: RunData, phase: 'window' | 'fair' = 'window'): CountryThroughput[] {
  const w = phase === 'fair' ? run.fair : run.window;
  const start = phase === 'fair' ? run.readings.fairStart : run.readings.start;
  const end = phase === 'fair' ? run.readings.fairEnd : run.readings.end;
  if (!w || !start || !end) return [];
  const seconds = (w.to - w.from) / 1_000;
  return Object.keys(end.sim).map((country) => {
    const looks = run.backlog.filter((b) => inside(b.t, w)).map((b) => Object.values(b.jobs[country] ?? {}).reduce((x, y) => x + y, 0));
    return {
      country,
      callsPerSecond: (end.sim[country]!.calls - (start.sim[country]?.calls ?? 0)) / seconds,
      throttled: end.sim[country]!.throttled - (start.sim[country]?.throttled ?? 0),
      minPending: looks.length ? Math.min(...looks) : null,
    };
  });
}

/** 429s the simulator answered over the whole run (every country). */
export function throttledInRun(run: RunData): number {
  const last = run.readings.fairEnd ?? run.readings.end;
  return Object.values(last.sim).reduce((n, c) => n + c.throttled, 0);
}

export interface ImportShares {
  /** Import pages (one upstream call each) per account in the fairness window, every country. */
  readonly calls: Record<string, number>;
  readonly perCountry: Record<string, Record<string, number>>;
  readonly heavyShare: number | null;
  /** weight_heavy / Σ weights of the accounts backlogged in the class. */
  readonly configuredShare: number;
  /** Pages of accounts the fairness phase did not start (none expected). */
  readonly unattributed: number;
}

const RESOLVE_JOB = /^ean-([0-9a-f]{24})-([A-Z]{2})(?:-p\d+)?$/;

/**
 * Each import page's call goes to the account that started the import: the job id names the
 * import (src/watch/ean-imports.ts, eanResolveJobId), the import keeper knows whose it is. Pages that
 * completed within the fairness window count; one page is one searchItems call.
 */
export function importShares(run: RunData): ImportShares | null {
  if (!run.fair || !run.heavy) return null;
  const calls: Record<string, number> = {};
  const perCountry: Record<string, Record<string, number>> = {};
  let unattributed = 0;
  for (const c of run.imports) {
    if (!inside(c.at, run.fair)) continue;
    const m = RESOLVE_JOB.exec(c.jobId);
    const owner = m ? run.importOwners.get(m[1]!) : undefined;
    if (!m || !owner) {
      unattributed++;
      continue;
    }
    calls[owner] = (calls[owner] ?? 0) + 1;
    const row = (perCountry[m[2]!] ??= {});
    row[owner] = (row[owner] ?? 0) + 1;
  }
  const total = Object.values(calls).reduce((a, b) => a + b, 0);
  const configuredShare = run.heavy.weight / (run.heavy.weight + run.fairLights.length);
  return { calls, perCountry, heavyShare: total ? (calls[run.heavy.hex] ?? 0) / total : null, configuredShare, unattributed };
}
