/**
 * A simulated day (`npm run bench:day`): the real planner (planCountry) and quota governor on an
 * injected clock drive one country through 24 hours with demand above the daily cap, and the
 * output is the spend per hour against the even line. The "workers" are simulated as in
 * test/workers/daily-quota.test.ts: each planned batch takes one permit at the pace and marks its
 * products refreshed, so what is measured is the planner's spreading of the day, not the upstream.
 * A second, small scenario checks that a cap of 100 calls a day still gets planned at all.
 */
import { FairTags } from '../src/fairness/fair-tags.js';
import { pathToFileURL } from 'node:url';
import mongoose from 'mongoose';
import { loadConfig } from '../config/env.js';
import { generateAppKey } from '../config/app-key.js';
import { JobProducer, type JobPayload } from '../jobs/queues.js';
import type { Country } from '../src/core/identifiers.js';
import { closeRedis, createRedis } from '../src/db/redis.js';
import { createLogger } from '../src/logger.js';
import { productModel } from '../src/models/product.js';
import { DailyUsage } from '../src/quota/daily-usage.js';
import { DayQuotaSpentError } from '../src/core/errors.js';
import { QuotaGovernor } from '../src/quota/governor.js';
import { planCountry } from '../src/scheduling/planner.js';
import { benchJobContext } from './lib/job-context.js';
import { parseBenchArgs, type BenchOptions } from './lib/args.js';
import { environmentOf, onCleanup, ownDatabase, ownRedis, runMain, uniqueName, withOwnCleanup, type Infra } from './lib/infra.js';
import { figure, report, round, type BenchResult, type Figure } from './lib/result.js';
import { asinOf, insertChunks, productDoc } from './lib/seed.js';
import { percentile } from './lib/stats.js';

const COUNTRY: Country = 'JP';
/** Midnight of a UTC quota day (QUOTA_DAY_TZ defaults to UTC), so hour h is [h:00, h+1:00). */
const DAY = Date.parse('2026-11-20T00:00:00Z');
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/**
 * The scheduler's cron ticks every 15 s in production; a simulated minute keeps a day at 1,440
 * passes (each pays for real MongoDB and Redis round trips, so 5,760 would quadruple the run) while
 * still being far shorter than the hourly interval whose keeping is measured.
 */
const TICK_MS = 60_000;
/**
 * A pass's credit is capped at the horizon's worth (rate × SCHEDULER_HORIZON_S), so a tick longer
 * than the horizon loses what it accrued beyond it: with the default 45 s and 60 s ticks a quarter
 * of the even rate would be thrown away each pass. Production ticks 3 times a horizon (15 s, 45 s);
 * the simulation keeps that ratio so its longer tick changes nothing but the number of passes.
 */
const HORIZON_S = (3 * TICK_MS) / 1_000;

interface Scenario {
  readonly name: string;
  readonly perDay: number;
  readonly p1: number;
  readonly p0: number;
}

interface DayRun {
  readonly scenario: Scenario;
  /** Calls made by the end of each hour (cumulative). */
  readonly byHour: number[];
  /** Priority-0 products still due (never refreshed today) at the end of each hour: the backlog a pass counts. */
  readonly p0DueByHour: number[];
  /** The governor's own count of the day at its end. */
  readonly used: number;
  readonly refused: number;
  readonly firstCallAt: number | null;
  readonly p1Refreshes: number;
  /**
   * Priority-1 refreshes planned a tick or more after the product was due (last refresh + interval):
   * a pass left it out although it was due.
   */
  readonly p1Late: number;
  /** Priority-1 calls more than a tick after due: a pass's lateness plus the tick's pacing (1/Q per earlier call). */
  readonly p1CallOverTick: number;
  /** More than a tick after due + a whole interval: a refresh skipped. */
  readonly p1Skipped: number;
  readonly p1MaxLateS: number;
  readonly p0Refreshed: number;
  readonly passMs: number[];
  readonly insertS: number;
  readonly wallS: number;
}

/** Runs the benchmark and removes everything it started and wrote, also when it fails. */
export function benchDay(opts: BenchOptions, inf?: Infra): Promise<BenchResult> {
  return withOwnCleanup(inf, (infra) => measureDay(opts, infra));
}

async function simulateDay(inf: Infra, sc: Scenario): Promise<DayRun> {
  const db = await ownDatabase(inf, 'sw_bench_day');
  const prefix = uniqueName('swb_day');
  await ownRedis(inf, prefix);
  // The real defaults except the cap under test and the horizon (see HORIZON_S): QUOTA_RPS 1,
  // FORCED_RESERVE 0.05, the coalescing and the refresh intervals as a deployment has them.
  const config = loadConfig({
    MONGODB_URI: db.uri,
    REDIS_URL: inf.redisUrl,
    REDIS_PREFIX: prefix,
    APP_KEY: generateAppKey(),
    COUNTRIES: COUNTRY,
    QUOTA_RPS: '1',
    QUOTA_PER_DAY: String(sc.perDay),
    SCHEDULER_HORIZON_S: String(HORIZON_S),
    LOG_LEVEL: 'silent',
  });
  const logger = createLogger(config);
  const redis = createRedis(inf.redisUrl, 'command', logger, 'bench-day');
  onCleanup('day Redis connection', () => closeRedis(redis));
  const jobs = new JobProducer(redis, prefix, logger, new FairTags(redis, prefix));
  onCleanup('day queues', () => jobs.close());
  const usage = new DailyUsage(db.conn);
  const clock = { now: DAY };
  const quota = new QuotaGovernor(redis, prefix, {
    ...config.quota,
    dayTimeZone: 'UTC',
    usage,
    clock: () => clock.now,
  });
  onCleanup('day governor', async () => {
    quota.close();
    await usage.settled();
  });
  const deps = benchJobContext({ config, logger, mongo: db.conn, redis, prefix, jobs, quota });
  const products = productModel(db.conn);
  const interval = config.refresh.intervalMs;

  // Steady state, not a cold start: the hourly products come due evenly over the first hour (as
  // after a day of hourly refreshes), the daily ones are all overdue (the backlog of a demand above
  // the cap), oldest first. A cold start with every product due at 00:00 would measure the catch-up.
  const p1Due = new Map<string, number>();
  await products.createIndexes();
  const t0 = performance.now();
  await insertChunks(db.conn, 'products', sc.p1 + sc.p0, (i) => {
    const asin = asinOf(i);
    const p1 = i < sc.p1;
    const due = p1 ? DAY + Math.floor((i * interval[1]) / sc.p1) : DAY - DAY_MS + Math.floor(((i - sc.p1) * DAY_MS) / sc.p0);
    if (p1) p1Due.set(asin, due);
    return productDoc({ country: COUNTRY, asin, priority: p1 ? 1 : 0, nextRefreshAt: new Date(due), createdAt: new Date(DAY - DAY_MS) });
  });
  const insertS = (performance.now() - t0) / 1_000;
  console.log(`day[${sc.name}]: ${sc.p1} priority-1 + ${sc.p0} priority-0 products inserted in ${round(insertS, 1)} s`);

  const queue = jobs.queue(COUNTRY);
  const paceMs = quota.intervalMs(COUNTRY);
  const byHour: number[] = [];
  const p0DueByHour: number[] = [];
  const passMs: number[] = [];
  let calls = 0;
  let refused = 0;
  let firstCallAt: number | null = null;
  let p1Refreshes = 0;
  let p1Late = 0;
  let p1CallOverTick = 0;
  let p1Skipped = 0;
  let p1MaxLate = 0;
  let p0Refreshed = 0;
  const started = performance.now();
  for (let tick = DAY; tick < DAY + DAY_MS; tick += TICK_MS) {
    clock.now = tick;
    const p = performance.now();
    await planCountry(deps, COUNTRY, new Date(tick));
    passMs.push(performance.now() - p);
    const planned = await queue.getJobs(['prioritized', 'wait']);
    // The tick's calls follow each other at the pace, 1/Q apart, as the governor books them.
    let at = tick;
    for (const job of planned) {
      const data = job.data as JobPayload<'refresh.p1' | 'refresh.p0'>;
      clock.now = at;
      try {
        await quota.permit(COUNTRY, 'refresh');
      } catch (err) {
        if (!(err instanceof DayQuotaSpentError)) throw err;
        // As workers/handlers/refresh.ts does: the products go back to the planner, due as they were.
        refused++;
        await products.updateMany(
          { country: COUNTRY, asin: mongoose.trusted({ $in: data.asins }), plan_token: data.claim ?? null },
          { $set: { next_refresh_at: new Date(data.due ?? at), plan_token: null } },
        );
        continue;
      }
      calls++;
      firstCallAt ??= at;
      const hourly = data.asins.filter((a) => p1Due.has(a));
      const daily = data.asins.filter((a) => !p1Due.has(a));
      for (const a of hourly) {
        const due = p1Due.get(a)!;
        const late = at - due;
        p1Refreshes++;
        p1MaxLate = Math.max(p1MaxLate, late);
        // The first pass at or after `due` comes less than a tick after it; a later one left it out.
        if (tick - due >= TICK_MS) p1Late++;
        if (late > TICK_MS) p1CallOverTick++;
        if (late > interval[1] + TICK_MS) p1Skipped++;
        p1Due.set(a, at + interval[1]);
      }
      p0Refreshed += daily.length;
      const refreshed = (asins: string[], priority: 0 | 1) => ({
        updateMany: {
          filter: { country: COUNTRY, asin: mongoose.trusted({ $in: asins }) },
          update: { $set: { next_refresh_at: new Date(at + interval[priority]), plan_token: null, last_attempt_at: new Date(at) } },
        },
      });
      await products.bulkWrite([...(hourly.length ? [refreshed(hourly, 1)] : []), ...(daily.length ? [refreshed(daily, 0)] : [])]);
      at += paceMs;
    }
    // Done (or refused): nothing of this tick is left queued, so the next pass's room is the horizon's.
    await queue.obliterate({ force: true });
    const hour = Math.floor((tick - DAY) / HOUR_MS);
    byHour[hour] = calls;
    p0DueByHour[hour] = sc.p0 - p0Refreshed;
    if ((tick + TICK_MS - DAY) % (6 * HOUR_MS) === 0)
      console.log(`day[${sc.name}]: ${hour + 1}:00 simulated, ${calls} calls, ${round((performance.now() - started) / 1_000, 1)} s`);
  }
  const wallS = (performance.now() - started) / 1_000;
  const used = (await quota.day(COUNTRY, DAY + DAY_MS - 1)).used;
  return {
    scenario: sc,
    byHour,
    p0DueByHour,
    used,
    refused,
    firstCallAt,
    p1Refreshes,
    p1Late,
    p1CallOverTick,
    p1Skipped,
    p1MaxLateS: p1MaxLate / 1_000,
    p0Refreshed,
    passMs,
    insertS,
    wallS,
  };
}

interface HourRow {
  hour: string;
  calls: number;
  cumulative: number;
  even: number;
  ofEven: number;
  passP50Ms: number;
  p0Due: number;
}

/** One row per hour: calls in it, cumulative, the even line cap × (h+1)/24 and the ratio to it, the hour's pass time and backlog. */
function hourTable(run: DayRun): HourRow[] {
  const cap = run.scenario.perDay;
  const perHour = HOUR_MS / TICK_MS;
  return run.byHour.map((cum, h) => {
    const even = (cap * (h + 1)) / 24;
    return {
      hour: `${String(h).padStart(2, '0')}:00`,
      calls: cum - (h > 0 ? run.byHour[h - 1]! : 0),
      cumulative: cum,
      even: round(even, 1),
      ofEven: round(cum / even, 3),
      passP50Ms: round(percentile(run.passMs.slice(h * perHour, (h + 1) * perHour), 50) ?? 0, 1),
      p0Due: run.p0DueByHour[h]!,
    };
  });
}

function printTable(run: DayRun): void {
  console.log(`\nday[${run.scenario.name}]: spend per hour, cap ${run.scenario.perDay}`);
  console.log('  hour   calls  cumulative    even   cum/even  pass p50 ms  p0 due at end');
  for (const r of hourTable(run)) {
    console.log(
      `  ${r.hour} ${String(r.calls).padStart(7)} ${String(r.cumulative).padStart(11)} ${r.even.toFixed(1).padStart(7)} ${r.ofEven.toFixed(3).padStart(10)}` +
        ` ${r.passP50Ms.toFixed(1).padStart(12)} ${String(r.p0Due).padStart(14)}`,
    );
  }
}

function timing(run: DayRun): Record<string, number | null> {
  const p = (q: number) => {
    const v = percentile(run.passMs, q);
    return v === null ? null : round(v, 1);
  };
  return {
    wallS: round(run.wallS, 1),
    insertS: round(run.insertS, 1),
    passes: run.passMs.length,
    passP50Ms: p(50),
    passP99Ms: p(99),
    passMaxMs: p(100),
  };
}

async function measureDay(_opts: BenchOptions, inf: Infra): Promise<BenchResult> {
  const startedAt = new Date().toISOString();
  const notes: string[] = [];
  const t0 = performance.now();
  // 200 hourly products = 480 calls a day, 100,000 daily = 10,000: 10,480 wanted, 8,640 allowed.
  const main = await simulateDay(inf, { name: 'main', perDay: 8_640, p1: 200, p0: 100_000 });
  printTable(main);
  const small = await simulateDay(inf, { name: 'small', perDay: 100, p1: 0, p0: 5_000 });
  printTable(small);
  const wallS = (performance.now() - t0) / 1_000;

  const cap = main.scenario.perDay;
  const figures: Figure[] = [
    figure(
      "share of the day's cap spent by 12:00",
      main.byHour[11]! / cap,
      '',
      { op: '<=', value: 0.52, source: 'issue' },
      `${main.byHour[11]} of ${cap} calls; even line 0.5`,
    ),
    figure(
      "share of the day's cap spent by 24:00",
      main.byHour[23]! / cap,
      '',
      { op: '>=', value: 0.97, source: 'issue' },
      `${main.byHour[23]} of ${cap} calls; governor counted ${main.used}`,
    ),
    figure(
      "calls above the day's cap",
      Math.max(0, main.used - cap, main.byHour[23]! - cap),
      'calls',
      { op: '==', value: 0, source: 'issue' },
      `${main.refused} permits refused`,
    ),
    figure(
      'priority-1 refreshes planned a tick late',
      main.p1Late,
      'refreshes',
      { op: '==', value: 0, source: 'issue' },
      `priority 1 keeps its interval before priority 0 gets anything; of ${main.p1Refreshes} refreshes ${main.p1CallOverTick} called > ${TICK_MS / 1_000} s after due ` +
        `(latest ${round(main.p1MaxLateS, 1)} s: the tick's wait plus its pacing), ${main.p1Skipped} a whole interval late`,
    ),
    figure('small cap (100/day): first call after 00:00', small.firstCallAt === null ? null : (small.firstCallAt - DAY) / HOUR_MS, 'h', {
      op: '<=',
      value: 6,
      source: 'ours',
    }),
    figure(
      'small cap (100/day): calls by 24:00',
      small.byHour[23]!,
      'calls',
      { op: '>=', value: 97, source: 'issue' },
      `governor counted ${small.used}`,
    ),
    figure('small cap (100/day): calls above the cap', Math.max(0, small.used - small.scenario.perDay), 'calls', {
      op: '==',
      value: 0,
      source: 'issue',
    }),
    figure(
      'wall time of the run',
      round(wallS, 1),
      's',
      null,
      `main day ${round(main.wallS, 1)} s, small day ${round(small.wallS, 1)} s, inserts excluded`,
    ),
    figure('planner pass time p50 (main)', round(percentile(main.passMs, 50) ?? 0, 1), 'ms', null),
    figure('planner pass time p99 (main)', round(percentile(main.passMs, 99) ?? 0, 1), 'ms', null),
  ];
  if (main.insertS > 60) notes.push(`inserting ${main.scenario.p1 + main.scenario.p0} products took ${round(main.insertS, 1)} s`);
  notes.push(
    `simulated clock: the planner runs every ${TICK_MS / 1_000} s of a simulated day (production: every 15 s) with a ${HORIZON_S} s horizon (production: 45 s, 3 ticks), so a pass's credit is not clipped by the horizon; workers take permits at 1/Q within a tick`,
  );
  if (inf.mongoIsEmulator) notes.push(`MongoDB is the CI stand-in (${inf.mongoVersion}): pass times are the stand-in's, not a mongod's`);
  return {
    name: 'day',
    startedAt,
    environment: environmentOf(inf),
    parameters: { country: COUNTRY, tickS: TICK_MS / 1_000, horizonS: HORIZON_S, quotaRps: 1, scenarios: [main.scenario, small.scenario] },
    figures,
    details: {
      main: {
        perHour: hourTable(main),
        ...timing(main),
        p1Refreshes: main.p1Refreshes,
        p1CallOverTick: main.p1CallOverTick,
        p1Skipped: main.p1Skipped,
        p1MaxLateS: round(main.p1MaxLateS, 1),
        p0Refreshed: main.p0Refreshed,
        refused: main.refused,
      },
      small: {
        perHour: hourTable(small),
        ...timing(small),
        firstCallAt: small.firstCallAt === null ? null : new Date(small.firstCallAt).toISOString(),
      },
      wallS: round(wallS, 1),
    },
    notes,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runMain('day', 3_600_000, async () => report(await benchDay(parseBenchArgs())));
}
