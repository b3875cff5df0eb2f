/**
 * One run of bench:tenants on fresh data: its own database, Redis prefix, simulator (so its
 * counters start at zero) and product processes (lib/product-processes.ts). The light accounts
 * are the same in every run; `withHeavy` adds the heavy account and, after the measured window,
 * the fairness phase in which a few light accounts import beside it. What it returns is raw
 * (events, samples, counter readings); lib/tenants-measures.ts makes the figures.
 */
import { generateAppKey, parseAppKey } from '../../config/app-key.js';
import type { Country } from '../../src/core/identifiers.js';
import mongoose, { type Connection } from 'mongoose';
import { countryTag } from '../../src/db/redis-keys.js';
import { registerModels } from '../../src/models/index.js';
import { productModel } from '../../src/models/product.js';
import type { BenchOptions } from './args.js';
import { sampleBacklog, type BacklogSample } from './backlog-sampler.js';
import { readDeliveries, type DeliveryRecord } from './delivery-records.js';
import { snapshotLane, type LaneSnapshot } from './fair-lane-snapshot.js';
import { keepImportsPending, type ImportKeeper } from './import-keeper.js';
import { ownDatabase, ownRedis, uniqueName, type Infra } from './infra.js';
import { logCompletions, type Completion } from './job-events.js';
import { readerOf, startProduct, startScheduler, type Readings } from './product-processes.js';
import { runCliToEnd } from './proc.js';
import { hammerUpdates, occasionalUpdates, type TimedSample, type UpdateDriver } from './tenant-updates.js';
import { HEAVY, simulatorEnv, tenantsProductEnv } from './tenants-env.js';
import type { TenantsParams } from './tenants-params.js';
import { createAccounts, eansFor, heavyAsins, lightAsins, scheduleFirstRefreshes, seedWatches, type Account } from './tenants-seed.js';
import { createHeavyAlerts, createLightAlerts, heavyNodes, watchBrowseNodes, type LightAlert } from './tenants-setup.js';
import { probeUpstreamLatency } from './upstream-probe.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

/** Codes each light account has for the fairness phase: more than it can import in it. */
const LIGHT_EANS = 200;
/** From the fairness phase's start to its measurement: the light accounts' imports reach the head of the queues. */
const FAIR_SETTLE_MS = 15_000;
/** After a run without a fairness phase: deliveries of changes seen at the window's end still arrive. */
const DRAIN_MS = 10_000;
const BACKLOG_EVERY_MS = 5_000;
/** getItems calls of the latency probe, before any worker calls. */
const LATENCY_PROBES = 20;

export interface Window {
  readonly from: number;
  readonly to: number;
}

export interface RunData {
  readonly withHeavy: boolean;
  readonly env: Record<string, string>;
  readonly simEnv: Record<string, string>;
  readonly t0: number;
  readonly window: Window;
  readonly fair: Window | null;
  readonly readings: { start: Readings; end: Readings; fairStart: Readings | null; fairEnd: Readings | null };
  readonly lightAsins: ReadonlySet<string>;
  readonly lightP1Asins: ReadonlySet<string>;
  /**
   * The light products' planned intervals at the window's end (next_refresh_at − last_attempt_at of
   * those not claimed, s) by priority: with each product's period between refreshes, what of the
   * period is the interval and what is the wait to be planned and run.
   */
  readonly lightIntervalsS: { readonly p0: readonly number[]; readonly p1: readonly number[] };
  /** The light products' change-rate estimates (changes an hour) at the window's end, and each country's tuned policy. */
  readonly lightRates: readonly number[];
  readonly policies: Record<string, Record<string, string>>;
  readonly heavyAsins: ReadonlySet<string>;
  readonly heavy: { readonly hex: string; readonly weight: number } | null;
  readonly fairLights: readonly string[];
  /** The import and crawl lanes half-way through the fairness phase. */
  readonly lanes: readonly LaneSnapshot[];
  readonly refreshes: readonly Completion[];
  readonly imports: readonly Completion[];
  readonly importOwners: ReadonlyMap<string, string>;
  readonly importRefusals: Record<string, number>;
  readonly importExhausted: readonly string[];
  readonly lightUpdates: readonly TimedSample[];
  readonly heavyUpdates: readonly TimedSample[];
  readonly lightAlerts: readonly LightAlert[];
  readonly receiver: { readonly arrivals: ReadonlyMap<string, number>; readonly counts: WebhookReceiver['counts'] };
  /** The light accounts' deliveries, read after the processes stopped. */
  readonly lightDeliveries: readonly DeliveryRecord[];
  readonly backlog: readonly BacklogSample[];
  /** getItems round trips to the simulator from this process, before the run's load (ms). */
  readonly upstreamLatencyMs: readonly number[];
  readonly warnings: Record<string, Record<string, number>>;
  readonly timings: Record<string, number>;
}

const say = (line: string) => console.log(`tenants: ${new Date().toISOString().slice(11, 19)} ${line}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sleepUntil = (t: number) => sleep(Math.max(0, t - Date.now()));

interface Light {
  readonly account: Account;
  readonly asins: readonly string[];
  readonly p1: readonly string[];
}

async function plannedIntervals(
  conn: Connection,
  asins: readonly string[],
): Promise<{ intervals: RunData['lightIntervalsS']; rates: number[] }> {
  const rows = await productModel(conn)
    .find({ asin: mongoose.trusted({ $in: asins }), plan_token: null })
    .select({ priority: 1, next_refresh_at: 1, last_attempt_at: 1, change_rate: 1 })
    .lean();
  const intervals = { p0: [] as number[], p1: [] as number[] };
  const rates: number[] = [];
  for (const r of rows) {
    if (r.change_rate) rates.push(r.change_rate);
    if (!r.next_refresh_at || !r.last_attempt_at) continue;
    (r.priority === 1 ? intervals.p1 : intervals.p0).push((r.next_refresh_at.getTime() - r.last_attempt_at.getTime()) / 1_000);
  }
  return { intervals, rates };
}

export async function runTenants(inf: Infra, opts: BenchOptions, p: TenantsParams, withHeavy: boolean): Promise<RunData> {
  const timings: Record<string, number> = {};
  const mark = (what: string, since: number) => (timings[what] = Math.round((Date.now() - since) / 100) / 10);
  const countries = opts.countries;
  const label = withHeavy ? 'with' : 'without';

  // ---- data: accounts and their watched products (scheduled later) -----------------------------
  let t = Date.now();
  const db = await ownDatabase(inf, `sw_bench_tenants_${label}`);
  const prefix = uniqueName(`swb_tenants_${label}`);
  // Its cleanup deletes the run's keys.
  const redis = await ownRedis(inf, prefix);
  registerModels(db.conn);
  await Promise.all(Object.values(db.conn.models).map((m) => m.createIndexes()));
  const appKeyText = generateAppKey();
  const names = [...Array.from({ length: p.lights }, (_, i) => `light-${String(i).padStart(3, '0')}`), ...(withHeavy ? ['heavy'] : [])];
  const accounts = await createAccounts(db.conn, parseAppKey(appKeyText)!, names);
  const lights: Light[] = accounts.slice(0, p.lights).map((account, i) => {
    const asins = lightAsins(i, p.lightP1 + p.lightP0);
    return { account, asins, p1: asins.slice(0, p.lightP1) };
  });
  const heavy: Account | undefined = withHeavy ? accounts[p.lights] : undefined;
  const heavyWatched = heavy ? heavyAsins(HEAVY.alerts) : [];
  const seeds = lights.map((l) => ({ owner: l.account.id, asins: l.asins, priorityOf: (i: number) => (i < p.lightP1 ? 1 : 0) as 0 | 1 }));
  if (heavy) seeds.push({ owner: heavy.id, asins: heavyWatched, priorityOf: () => 0 });
  await seedWatches(db.conn, countries, seeds, new Date());
  mark('seedS', t);

  t = Date.now();
  const env = tenantsProductEnv(inf, db, prefix, appKeyText, opts, p);
  const simEnv = simulatorEnv(opts, p);
  const product = await startProduct(label, env, simEnv);
  const { apiUrl, simUrl } = product;
  mark('startS', t);

  // ---- set-up through the api -----------------------------------------------------------------
  t = Date.now();
  const receiver = await startWebhookReceiver();
  if (heavy) await runCliToEnd('users:weight', ['users:weight', '--email', heavy.email, '--weight', String(p.heavyWeight)], env, 120_000);
  const lightAlerts = await createLightAlerts(apiUrl, simUrl, lights, countries, receiver.okUrl);
  if (heavy) {
    await createHeavyAlerts(apiUrl, heavy, heavyWatched, countries, receiver.failUrl);
    await watchBrowseNodes(apiUrl, heavy, heavyNodes(HEAVY.browseWatches));
  }
  mark('setupS', t);
  const probe = lightAlerts[0]!;
  const upstreamLatencyMs = await probeUpstreamLatency(env, simUrl, probe.country as Country, probe.asin, LATENCY_PROBES);

  // ---- the clock starts: first refreshes due, scheduler, clients ------------------------------
  const refreshLog = await logCompletions(inf.redisUrl, prefix, 'refresh', countries as readonly Country[]);
  const importLog = await logCompletions(inf.redisUrl, prefix, 'import', countries as readonly Country[]);
  const allAsins = [...lights.flatMap((l) => l.asins), ...heavyWatched];
  await scheduleFirstRefreshes(db.conn, countries, allAsins, new Date(), Math.min(30_000, (p.warmupS * 1000) / 2));
  const scheduler = await startScheduler(label, env);
  const t0 = Date.now();
  say(`scheduler started after ${JSON.stringify(timings)} s of seeding, start-up and set-up; warming up ${p.warmupS} s`);
  const lightUpdates = occasionalUpdates(
    apiUrl,
    lights.map((l) => ({ token: l.account.token, asins: l.asins })),
    countries,
    p.lightUpdateRate,
  );
  let heavyUpdates: UpdateDriver | undefined;
  let keeper: ImportKeeper | undefined;
  if (heavy) {
    heavyUpdates = hammerUpdates(apiUrl, heavy.token, heavyWatched, countries);
    keeper = keepImportsPending(apiUrl, db.conn, HEAVY.pendingImports);
    keeper.add([{ hex: heavy.hex, token: heavy.token, eans: eansFor(0, HEAVY.eans) }]);
  }
  const children = [...product.children, scheduler];
  const backlog = sampleBacklog(inf.redisUrl, prefix, countries, BACKLOG_EVERY_MS);
  const watched = children.map((c) => ({ name: c.name.replace(` (${label})`, ''), pid: c.pid }));
  if (inf.mongoPid) watched.push({ name: `mongodb (${inf.mongoIsEmulator ? 'stand-in' : 'mongod'})`, pid: inf.mongoPid });
  if (inf.redisPid) watched.push({ name: 'redis-server', pid: inf.redisPid });
  watched.push({ name: 'bench (clients, receiver)', pid: process.pid });
  const read = readerOf(product, watched);

  // ---- the measured window ----------------------------------------------------------------------
  await sleepUntil(t0 + p.warmupS * 1000);
  const start = await read();
  const from = Date.now();
  say(`measuring ${p.windowS} s`);
  await sleepUntil(from + p.windowS * 1000);
  const end = await read();
  const window = { from, to: Date.now() };
  const { intervals: lightIntervalsS, rates: lightRates } = await plannedIntervals(
    db.conn,
    lights.flatMap((l) => l.asins),
  );
  const policies = Object.fromEntries(
    await Promise.all(countries.map(async (c) => [c, await redis.hgetall(`${countryTag(prefix, c as Country)}:refresh:policy`)] as const)),
  );

  // ---- the fairness phase: a few light accounts import beside the heavy one ---------------------
  const fairLights = heavy ? lights.slice(0, p.fairLights).map((l) => l.account) : [];
  let fairness: { window: Window; start: Readings; end: Readings; lanes: LaneSnapshot[] } | null = null;
  if (keeper) {
    say(
      `fairness phase: ${fairLights.length} light accounts import beside the heavy one; measuring ${p.fairS} s after ${FAIR_SETTLE_MS / 1000} s`,
    );
    keeper.add(fairLights.map((a, i) => ({ hex: a.hex, token: a.token, eans: eansFor(i + 1, LIGHT_EANS) })));
    await sleep(FAIR_SETTLE_MS);
    const fairStart = await read();
    const fairFrom = Date.now();
    await sleepUntil(fairFrom + (p.fairS * 1000) / 2);
    // The crawl lanes too: the heavy account's crawl backlog is the deepest queue of the run.
    const lanes = await Promise.all(
      countries.flatMap((c) => (['import', 'crawl'] as const).map((cls) => snapshotLane(redis, prefix, c as Country, cls))),
    );
    await sleepUntil(fairFrom + p.fairS * 1000);
    fairness = { start: fairStart, end: await read(), window: { from: fairFrom, to: Date.now() }, lanes };
  } else {
    await sleep(DRAIN_MS);
  }

  // ---- stop, then read what the product recorded ------------------------------------------------
  say('stopping, then reading the deliveries');
  await Promise.all([lightUpdates.stop(5_000), heavyUpdates?.stop(5_000), keeper?.stop(), backlog.stop()]);
  const warnings = Object.fromEntries(children.map((c) => [c.name, Object.fromEntries(c.warnings)]));
  await Promise.all(children.map((c) => c.stop()));
  await Promise.all([refreshLog.close(), importLog.close()]);
  const lightDeliveries = await readDeliveries(
    db.conn,
    lightAlerts.map((a) => a.endpointId),
  );

  return {
    withHeavy,
    env,
    simEnv,
    t0,
    window,
    fair: fairness?.window ?? null,
    readings: { start, end, fairStart: fairness?.start ?? null, fairEnd: fairness?.end ?? null },
    lightAsins: new Set(lights.flatMap((l) => l.asins)),
    lightP1Asins: new Set(lights.flatMap((l) => l.p1)),
    lightIntervalsS,
    lightRates,
    policies: Object.fromEntries(
      Object.entries(policies).map(([c, p]) => [c, { ...p, prior: p.prior ? `${JSON.parse(p.prior).length} buckets` : '' }]),
    ),
    heavyAsins: new Set(heavyWatched),
    heavy: heavy ? { hex: heavy.hex, weight: p.heavyWeight } : null,
    fairLights: fairLights.map((a) => a.hex),
    lanes: fairness?.lanes ?? [],
    refreshes: refreshLog.completions,
    imports: importLog.completions,
    importOwners: keeper?.owners ?? new Map(),
    importRefusals: Object.fromEntries(keeper?.refusals ?? []),
    importExhausted: [...(keeper?.exhausted ?? [])],
    lightUpdates: lightUpdates.samples,
    heavyUpdates: heavyUpdates?.samples ?? [],
    lightAlerts,
    receiver: { arrivals: receiver.arrivals, counts: receiver.counts },
    lightDeliveries,
    backlog: backlog.samples,
    upstreamLatencyMs,
    warnings,
    timings,
  };
}
