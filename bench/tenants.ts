/**
 * One heavy account beside 99 light ones (`npm run bench:tenants`): does the heavy one take only
 * its share? Two runs of the same length, each on fresh data with the real processes started by
 * the CLI (simulator, api, scheduler, two workers), Q calls a second per country in JP and US:
 * the light accounts alone, then with the heavy account loading every class of work (20 imports
 * always pending, 500 browse watches, 1,000 alerts to a receiver that fails after 2 s, forced
 * updates as fast as RATE_LIMIT_UPDATE lets it). The second run ends with a fairness phase in which
 * a few light accounts keep as many imports pending as the heavy one, whose weight is set with
 * `users:weight`, so the import class is shared while everyone is backlogged.
 *
 * Flags: the shared --quota --latency --countries (lib/args.ts) and this benchmark's own (lib/tenants-params.ts).
 */
import { pathToFileURL } from 'node:url';
import { parseBenchArgs, type BenchOptions } from './lib/args.js';
import { environmentOf, runMain, withOwnCleanup, type Infra } from './lib/infra.js';
import { productRevision } from './lib/product-revision.js';
import { figure, report, round, type BenchResult, type Figure } from './lib/result.js';
import { percentile } from './lib/stats.js';
import { finite, runDetails } from './lib/tenants-details.js';
import { parseTenantsArgs, sharedArgs, type TenantsParams } from './lib/tenants-params.js';
import { HEAVY } from './lib/tenants-env.js';
import { runTenants, type RunData } from './lib/tenants-run.js';
import {
  importShares,
  latenciesInWindow,
  refreshesInWindow,
  throttledInRun,
  throughputInWindow,
  webhookDelays,
} from './lib/tenants-measures.js';
import { FAIL_AFTER_MS } from './lib/webhook-receiver.js';

async function measureTenants(opts: BenchOptions, p: TenantsParams, inf: Infra): Promise<BenchResult> {
  const startedAt = new Date().toISOString();
  const revision = productRevision();
  console.log(`tenants: run 1 of 2, ${p.lights} light accounts alone (${p.warmupS} s warm-up, ${p.windowS} s window)`);
  const without = await withOwnCleanup(inf, (i) => runTenants(i, opts, p, false));
  console.log(`tenants: run 2 of 2, with the heavy account (then ${p.fairS} s of the fairness phase)`);
  const withHeavy = await withOwnCleanup(inf, (i) => runTenants(i, opts, p, true));

  const notes: string[] = [];
  const q = opts.quota;
  const revisionAtEnd = productRevision();
  if (JSON.stringify(revision) !== JSON.stringify(revisionAtEnd))
    notes.push('the product changed while this ran (parameters.product, productAtEnd): the two runs may have measured different code');

  // 1. Light refreshes per minute, with ÷ without.
  const rA = refreshesInWindow(without);
  const rB = refreshesInWindow(withHeavy);
  const refreshRatio = rA.lightPerMinute > 0 ? rB.lightPerMinute / rA.lightPerMinute : null;

  // 2. Light forced-update latency.
  const targetMs = 1_000 / q + opts.latencyMs + 50;
  const uA = latenciesInWindow(without.lightUpdates, without.window);
  const uB = latenciesInWindow(withHeavy.lightUpdates, withHeavy.window);
  const notOk = Object.entries(uB.statuses).filter(([s]) => s !== '200');

  // 3. Light webhook delay.
  const wA = webhookDelays(without);
  const wB = webhookDelays(withHeavy);
  const p99B = percentile(wB.ms, 99);

  // 4. Country throughput while backlogged.
  const tB = throughputInWindow(withHeavy);
  const worst = tB.reduce((a, b) => (b.callsPerSecond < a.callsPerSecond ? b : a), tB[0]!);
  const throttled = throttledInRun(without) + throttledInRun(withHeavy);
  const backlogged = tB.every((c) => c.minPending !== null && c.minPending > 0);

  // 5. The heavy account's share of the import class in the fairness phase.
  const shares = importShares(withHeavy);
  const shareRatio = shares?.heavyShare != null ? shares.heavyShare / shares.configuredShare : null;

  const figures: Figure[] = [
    figure(
      'light refreshes/min without the heavy account',
      rA.lightPerMinute,
      '/min',
      null,
      `${rA.light} in ${round(minutesOf(without), 2)} min`,
    ),
    figure(
      'light refreshes/min with the heavy account',
      rB.lightPerMinute,
      '/min',
      null,
      `${rB.light} in ${round(minutesOf(withHeavy), 2)} min`,
    ),
    figure('1. light refreshes/min, with ÷ without', refreshRatio, '', { op: '>=', value: 0.95, source: 'issue' }),
    figure('light forced-update latency p99, without heavy', percentile(uA.ms, 99), 'ms', null, `${uA.ms.length} requests`),
    figure('light forced-update latency p50, with heavy', percentile(uB.ms, 50), 'ms'),
    figure(
      '2. light forced-update latency p99, with heavy',
      percentile(uB.ms, 99),
      'ms',
      { op: '<=', value: targetMs, source: 'issue' },
      `1/Q + ${opts.latencyMs} ms simulator latency + 50 ms; ${uB.ms.length} requests`,
    ),
    figure(
      'light forced updates not answered 200, with heavy',
      notOk.reduce((n, [, c]) => n + c, 0),
      'requests',
      { op: '==', value: 0, source: 'ours' },
      notOk.length ? JSON.stringify(Object.fromEntries(notOk)) : undefined,
    ),
    figure(
      'simulator latency, probed before the load (p50)',
      percentile(withHeavy.upstreamLatencyMs, 50),
      'ms',
      null,
      `configured ${opts.latencyMs} ms; p99 of ${withHeavy.upstreamLatencyMs.length}: ${round(percentile(withHeavy.upstreamLatencyMs, 99) ?? NaN, 1)} ms`,
    ),
    figure(
      'light webhook delay p99, without heavy',
      finite(percentile(wA.ms, 99)),
      'ms',
      null,
      `${wA.ms.length} deliveries, ${wA.missing} not arrived`,
    ),
    figure('light webhook delay p50, with heavy', finite(percentile(wB.ms, 50)), 'ms'),
    figure(
      '3. light webhook delay p99, with heavy',
      finite(p99B) === null ? null : p99B! / 1_000,
      's',
      { op: '<=', value: 5, source: 'issue' },
      `${wB.ms.length} deliveries of changes seen in the window, ${wB.missing} not arrived by the end`,
    ),
    ...tB.map((c) =>
      figure(`calls/s in ${c.country} while backlogged ÷ Q`, c.callsPerSecond / q, '', null, `${round(c.callsPerSecond, 2)} calls/s`),
    ),
    figure(
      '4. country throughput while backlogged ÷ Q (worst country)',
      worst ? worst.callsPerSecond / q : null,
      '',
      { op: '>=', value: 0.99, source: 'issue' },
      backlogged
        ? `${worst?.country}; every queue look in the window found jobs pending`
        : 'some look in the window found a country with no job pending',
    ),
    figure('4. upstream 429s (both runs)', throttled, '', { op: '==', value: 0, source: 'issue' }),
    figure(
      'heavy share of import calls, everyone backlogged',
      shares?.heavyShare ?? null,
      '',
      null,
      shares ? `configured ${round(shares.configuredShare, 4)}` : undefined,
    ),
    figure(
      '5. heavy share ÷ configured share, |x − 1|',
      shareRatio === null ? null : Math.abs(shareRatio - 1),
      '',
      { op: '<=', value: 0.05, source: 'issue' },
      shareRatio === null
        ? undefined
        : `ratio ${round(shareRatio, 3)}; weight ${p.heavyWeight} against ${p.fairLights} light accounts of weight 1`,
    ),
  ];

  if (inf.mongoIsEmulator) {
    notes.push(
      `MongoDB is the wire-protocol stand-in (${inf.mongoVersion}): one thread for every process's queries; its CPU share is in details.*.cpuShareOfACoreInWindow`,
    );
  }
  if (withHeavy.importExhausted.length)
    notes.push(`accounts that ran out of codes to import (not backlogged to the end): ${withHeavy.importExhausted.join(', ')}`);
  if (shares && shares.unattributed) notes.push(`${shares.unattributed} import pages in the fairness window had no known account`);

  return {
    name: 'tenants',
    startedAt,
    environment: environmentOf(inf),
    parameters: {
      product: revision,
      productAtEnd: revisionAtEnd,
      quota: q,
      countries: opts.countries,
      simulatorLatencyMs: opts.latencyMs,
      ...p,
      heavy: { ...HEAVY, weight: p.heavyWeight, failingReceiverAnswers: `500 after ${FAIL_AFTER_MS} ms` },
      productEnvironment: Object.fromEntries(
        Object.entries(withHeavy.env).filter(([k]) => !['MONGODB_URI', 'REDIS_URL', 'APP_KEY', 'REDIS_PREFIX'].includes(k)),
      ),
      simulatorEnvironment: withHeavy.simEnv,
    },
    figures,
    details: {
      without: runDetails(without),
      with: runDetails(withHeavy),
      fairness: shares && { ...shares, lanesHalfWay: withHeavy.lanes },
      lightUpdateLatencyMs: { without: uA.ms.map(Math.round), with: uB.ms.map(Math.round) },
    },
    notes,
  };
}

function minutesOf(run: RunData): number {
  return (run.window.to - run.window.from) / 60_000;
}

/** As a program: `npm run bench:tenants -- --window 120 --fair-seconds 60`. */
export async function mainTenants(): Promise<void> {
  const opts = parseBenchArgs(sharedArgs(process.argv.slice(2)));
  const p = parseTenantsArgs();
  // Two runs of start-up, set-up, warm-up and window, the fairness phase, and room for a slow stand-in.
  const budgetS = 2 * (p.warmupS + p.windowS + 240) + p.fairS + 300;
  await runMain('tenants', budgetS * 1000, async () => {
    const result = await withOwnCleanup(undefined, (inf) => measureTenants(opts, p, inf));
    await report(result);
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await mainTenants();
