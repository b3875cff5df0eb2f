/**
 * Planner cost: time and MongoDB documents examined per scheduler tick with
 * 10^4, 10^5 and 10^6 products in the catalogue and a fixed number due. The planner's queries read
 * the `plan_due` index, so the cost should follow the number due, not the catalogue's size; on a
 * mongod's `explain()` shows it, and so does the CI stand-in's, which keeps real indexes, plans from
 * them and counts the keys and documents it examined. Its times are not mongod's (one thread, in
 * memory, in JavaScript), and the output says so: the counts are the figures to read there.
 */
import { FairTags } from '../src/fairness/fair-tags.js';
import { pathToFileURL } from 'node:url';
import type mongoose from 'mongoose';
import { loadConfig } from '../config/env.js';
import { generateAppKey } from '../config/app-key.js';
import { JobProducer } from '../jobs/queues.js';
import { closeRedis, createRedis } from '../src/db/redis.js';
import { createLogger } from '../src/logger.js';
import { productModel } from '../src/models/product.js';
import { DailyUsage } from '../src/quota/daily-usage.js';
import { QuotaGovernor } from '../src/quota/governor.js';
import { planCountry } from '../src/scheduling/planner.js';
import { LATE_SHARE, windowSize } from '../src/scheduling/due.js';
import { MAX_ITEMS_PER_CALL } from '../src/upstream/port.js';
import { benchJobContext } from './lib/job-context.js';
import { parseBenchArgs, type BenchOptions } from './lib/args.js';
import { withOwnCleanup, environmentOf, onCleanup, ownDatabase, ownRedis, runMain, uniqueName, type Infra } from './lib/infra.js';
import { figure, report, round, type BenchResult, type Figure } from './lib/result.js';
import { asinOf, insertChunks, priorityOf, productDoc } from './lib/seed.js';
import { percentile } from './lib/stats.js';
import { countryTag } from '../src/db/redis-keys.js';
import { ROLES, buildForMemory, measureRoleMemory, type RoleMemory } from './lib/role-memory.js';

const COUNTRY = 'JP';
/** The due products carry this creation date, so a tick can make exactly them due again. */
const DUE_MARK = new Date('2001-01-01T00:00:00Z');

interface Explained {
  readonly docsExamined: number | null;
  readonly keysExamined: number | null;
  /** Stage names of the winning plans, e.g. IXSCAN plan_due, COLLSCAN. */
  readonly stages: string[];
  readonly error?: string;
}

/** Sums `key` over every executionStats found in an explain answer (aggregations nest them). */
function sumKey(node: unknown, key: string): number | null {
  if (!node || typeof node !== 'object') return null;
  let total: number | null = null;
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    if (k === key && typeof v === 'number') total = (total ?? 0) + v;
    else if (k !== 'allPlansExecution' && k !== 'rejectedPlans') {
      const sub = sumKey(v, key);
      if (sub !== null) total = (total ?? 0) + sub;
    }
  }
  return total;
}

function stagesOf(node: unknown, out: string[] = []): string[] {
  if (!node || typeof node !== 'object') return out;
  const o = node as Record<string, unknown>;
  if (typeof o.stage === 'string' && ['IXSCAN', 'COLLSCAN', 'COUNT_SCAN', 'DISTINCT_SCAN'].includes(o.stage)) {
    out.push(typeof o.indexName === 'string' ? `${o.stage} ${o.indexName}` : o.stage);
  }
  for (const [k, v] of Object.entries(o)) if (k !== 'rejectedPlans' && k !== 'allPlansExecution') stagesOf(v, out);
  return out;
}

async function explain(db: mongoose.mongo.Db, command: Record<string, unknown>): Promise<Explained> {
  try {
    const res = await db.command({ explain: command, verbosity: 'executionStats' });
    // Only the executionStats part counts what was examined (queryPlanner has no counters).
    return {
      docsExamined: sumKey(res, 'totalDocsExamined'),
      keysExamined: sumKey(res, 'totalKeysExamined'),
      stages: stagesOf(res.queryPlanner ?? res),
    };
  } catch (err) {
    return { docsExamined: null, keysExamined: null, stages: [], error: (err as Error).message };
  }
}

/** What an adaptive pass reads besides: the bounds of its windows of due priority-0 products (src/scheduling/due.ts). */
interface AdaptiveReads {
  readonly window: number;
  /** Seen before this: the only products the stale window reads. */
  readonly staleBefore: Date;
}

/**
 * The planner's reads of one tick, explained: the two counts (as aggregations, as the driver sends
 * them), then the plan read (fixed) or the priority-1 read and the three windows of priority 0
 * (adaptive), each as pickDue sends it.
 */
async function explainTick(db: mongoose.mongo.Db, now: Date, limit: number, adaptive: AdaptiveReads | null): Promise<Explained[]> {
  const filter = { country: COUNTRY, next_refresh_at: { $lte: now } };
  const count = (priority: number) => ({
    aggregate: 'products',
    pipeline: [{ $match: { ...filter, priority } }, { $group: { _id: 1, n: { $sum: 1 } } }],
    cursor: {},
  });
  const projection = { asin: 1, priority: 1, next_refresh_at: 1 };
  const counts = [await explain(db, count(1)), await explain(db, count(0))];
  if (!adaptive) {
    return [...counts, await explain(db, { find: 'products', filter, sort: { priority: -1, next_refresh_at: 1 }, limit, projection })];
  }
  const p0 = { ...filter, priority: 0 };
  const windowRead = (f: object, sort: object, hint: string) => ({
    find: 'products',
    filter: f,
    sort,
    hint,
    limit: adaptive.window,
    projection,
  });
  return [
    ...counts,
    await explain(db, {
      find: 'products',
      filter: { ...filter, priority: 1 },
      sort: { priority: -1, next_refresh_at: 1 },
      limit,
      projection,
    }),
    await explain(db, windowRead(p0, { priority: -1, change_rate: -1 }, 'plan_rate')),
    await explain(db, windowRead(p0, { priority: -1, next_refresh_at: 1 }, 'plan_due')),
    await explain(
      db,
      windowRead({ ...p0, last_attempt_at: { $lte: adaptive.staleBefore } }, { priority: -1, last_attempt_at: 1 }, 'plan_stale'),
    ),
  ];
}

/** Runs the benchmark and removes everything it started and wrote, also when it fails. */
export function benchPlan(opts: BenchOptions, inf?: Infra): Promise<BenchResult> {
  return withOwnCleanup(inf, (infra) => measurePlan(opts, infra));
}

async function measurePlan(opts: BenchOptions, inf: Infra): Promise<BenchResult> {
  const startedAt = new Date().toISOString();
  const notes: string[] = [];
  const db = await ownDatabase(inf, 'sw_bench_plan');
  const prefix = uniqueName('swb_plan');
  await ownRedis(inf, prefix);
  const config = loadConfig({
    MONGODB_URI: db.uri,
    REDIS_URL: inf.redisUrl,
    REDIS_PREFIX: prefix,
    APP_KEY: generateAppKey(),
    COUNTRIES: COUNTRY,
    QUOTA_RPS: String(opts.quota),
    QUOTA_PER_DAY: '1000000000',
    LOG_LEVEL: 'silent',
  });
  const logger = createLogger(config);
  const redis = createRedis(inf.redisUrl, 'command', logger, 'bench-plan');
  onCleanup('planner Redis connection', () => closeRedis(redis));
  const jobs = new JobProducer(redis, prefix, logger, new FairTags(redis, prefix));
  onCleanup('planner queues', () => jobs.close());
  const usage = new DailyUsage(db.conn);
  const quota = new QuotaGovernor(redis, prefix, {
    ...config.quota,
    dayTimeZone: 'UTC',
    usage,
  });
  const deps = benchJobContext({ config, logger, mongo: db.conn, redis, prefix, jobs, quota });
  const products = productModel(db.conn);
  const coll = db.conn.db!.collection('products');
  const limit = Math.floor(opts.quota * config.workers.scheduler.horizonS) * MAX_ITEMS_PER_CALL;
  if (opts.due > limit) notes.push(`${opts.due} due exceed one tick's budget of ${limit} products: a tick plans ${limit}`);

  const perSize: {
    size: number;
    tickMs: number[];
    insertS: number;
    planned: number[];
    explained: Explained[];
    reads: number;
    memory: RoleMemory | null;
  }[] = [];
  if (opts.memorySeconds > 0) {
    console.log('plan: compiling the product for the memory figures (npm run build)');
    await buildForMemory();
  }
  for (const size of opts.sizes) {
    await coll.drop().catch(() => undefined);
    await products.createIndexes();
    const future = Date.now() + 86_400_000;
    const dueAt = new Date(Date.now() - 60_000);
    const t = Date.now();
    // The first `due` products are due; of the rest, two in three are watched and due later
    // (spread over the next days), one in three is watched by nobody (no next refresh at all).
    await insertChunks(db.conn, 'products', size, (i) =>
      productDoc(
        i < opts.due
          ? { country: COUNTRY, asin: asinOf(i), priority: priorityOf(i, opts.p1Share), nextRefreshAt: dueAt, createdAt: DUE_MARK }
          : i % 3 === 0
            ? { country: COUNTRY, asin: asinOf(i), priority: null, nextRefreshAt: null, createdAt: new Date(t) }
            : {
                country: COUNTRY,
                asin: asinOf(i),
                priority: priorityOf(i, opts.p1Share),
                nextRefreshAt: new Date(future + i * 1_000),
                createdAt: new Date(t),
              },
      ),
    );
    const insertS = (Date.now() - t) / 1000;
    console.log(`plan: ${size} products (${opts.due} due) inserted in ${round(insertS, 1)} s`);
    const tickMs: number[] = [];
    const plannedCounts: number[] = [];
    for (let k = 0; k < opts.ticks; k++) {
      // Each tick starts from the same state: the same products due, an empty queue (else the
      // budget would be spent by the previous tick's jobs).
      await coll.updateMany({ created_at: DUE_MARK }, { $set: { next_refresh_at: dueAt, plan_token: null } });
      await jobs.queue(COUNTRY).obliterate({ force: true });
      // And the same credit: one horizon's worth, as a scheduler's first pass has.
      await redis.del(`${countryTag(prefix, COUNTRY)}:plan:credit`);
      const started = performance.now();
      const plan = await planCountry(deps, COUNTRY, new Date());
      tickMs.push(performance.now() - started);
      plannedCounts.push(plan.enqueued.p1 + plan.enqueued.p0);
    }
    await coll.updateMany({ created_at: DUE_MARK }, { $set: { next_refresh_at: dueAt, plan_token: null } });
    const at = new Date();
    const adaptive =
      config.refresh.scheduling === 'adaptive'
        ? { window: windowSize(limit), staleBefore: new Date(at.getTime() - LATE_SHARE * config.refresh.intervalMs[0]) }
        : null;
    const explained = await explainTick(db.conn.db!, at, limit, adaptive);
    const reads = adaptive ? limit + 3 * adaptive.window : limit;
    console.log(`plan: ${size} products: ticks ${tickMs.map((m) => Math.round(m)).join(', ')} ms`);
    // The roles on this catalogue, the planner's due products included (--memory-seconds 0 skips it).
    const memory =
      opts.memorySeconds > 0 ? await measureRoleMemory(inf, db, size, { quota: opts.quota, seconds: opts.memorySeconds }) : null;
    if (memory) console.log(`plan: ${size} products: peak RSS ${JSON.stringify(memory.peakRssMiB)} MiB`);
    perSize.push({ size, tickMs, insertS, planned: plannedCounts, explained, reads, memory });
  }
  await coll.drop().catch(() => undefined);

  const figures: Figure[] = [];
  const explainable = perSize.every((s) => s.explained.every((e) => e.error === undefined));
  for (const s of perSize) {
    const median = percentile(s.tickMs, 50);
    figures.push(
      figure(
        `tick time, ${s.size} products`,
        median,
        'ms',
        null,
        `median of ${s.tickMs.length}; planned ${s.planned.join('/')} of ${opts.due} due`,
      ),
    );
    if (explainable) {
      const docs = s.explained.reduce((n, e) => n + (e.docsExamined ?? 0), 0);
      const keys = s.explained.reduce((n, e) => n + (e.keysExamined ?? 0), 0);
      figures.push(
        figure(
          `docs examined per tick, ${s.size} products`,
          docs,
          'docs',
          { op: '<=', value: s.reads, source: 'ours' },
          `keys examined ${keys}; the reads' limits: ${s.reads}`,
        ),
      );
      const usesIndex = s.explained.every((e) => e.stages.length > 0 && e.stages.every((st) => /plan_(due|rate|stale)/.test(st)));
      figures.push(
        figure(
          `planner reads use the plan indexes, ${s.size} products`,
          usesIndex ? 1 : 0,
          '',
          { op: '==', value: 1, source: 'issue' },
          [...new Set(s.explained.flatMap((e) => e.stages))].join(', '),
        ),
      );
    }
  }
  const first = perSize[0];
  const last = perSize[perSize.length - 1];
  if (first && last && last !== first) {
    const growth = (percentile(last.tickMs, 50) ?? 0) / (percentile(first.tickMs, 50) ?? 1);
    figures.push(
      figure(
        `tick time ${last.size} / ${first.size} products`,
        growth,
        '×',
        { op: '<=', value: 2, source: 'ours' },
        `catalogue ${last.size / first.size}× larger, same ${opts.due} due`,
      ),
    );
  }
  const measured = perSize.filter((s) => s.memory !== null);
  for (const s of measured) {
    const m = s.memory!;
    for (const role of ROLES) {
      figures.push(
        figure(`peak RSS, ${role}, ${s.size} products`, m.peakRssMiB[role] ?? null, 'MiB', { op: '<=', value: 150, source: 'issue' }),
      );
    }
    figures.push(
      figure(
        `api errors under the memory load, ${s.size} products`,
        m.apiErrors,
        'responses',
        { op: '==', value: 0, source: 'ours' },
        `${m.apiRequests} requests in ${opts.memorySeconds} s (failed: ${JSON.stringify(m.apiFailures)}); simulator ${round(m.peakRssMiB.simulator ?? NaN, 0)} MiB`,
      ),
    );
  }
  const small = measured[0];
  const large = measured[measured.length - 1];
  if (small && large && large !== small) {
    for (const role of ROLES) {
      const a = small.memory!.peakRssMiB[role];
      const b = large.memory!.peakRssMiB[role];
      figures.push(
        figure(`peak RSS ${large.size} / ${small.size} products, ${role}`, a && b ? b / a : null, '×', {
          op: '<=',
          value: 1.2,
          source: 'issue',
        }),
      );
    }
  }
  if (!explainable) {
    const why = perSize.flatMap((s) => s.explained).find((e) => e.error)?.error ?? '';
    notes.push(`explain() failed: ${why}; documents examined are not measurable here`);
  }
  if (inf.mongoIsEmulator) {
    notes.push(
      `the MongoDB under test is the stand-in (${inf.mongoVersion}), not mongod: it plans from the same indexes and its explain() counts what it examined, so the keys and documents examined are the figures to read; its times are those of one JavaScript thread. Run with MONGODB_URI on a real mongod for times`,
    );
  }
  return {
    name: 'plan',
    startedAt,
    environment: environmentOf(inf),
    parameters: {
      sizes: opts.sizes,
      due: opts.due,
      p1Share: opts.p1Share,
      ticks: opts.ticks,
      quota: opts.quota,
      tickBudgetProducts: limit,
    },
    figures,
    details: { perSize: perSize.map((s) => ({ ...s, tickMs: s.tickMs.map((m) => round(m, 1)), insertS: round(s.insertS, 1) })) },
    notes,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const opts = parseBenchArgs();
  const total = opts.sizes.reduce((a, b) => a + b, 0);
  await runMain('plan', (600 + total / 500) * 1000, async () => report(await benchPlan(opts)));
}
