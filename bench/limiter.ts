/**
 * The ceiling of the queue layer and the quota governor (`npm run bench:limiter`): the product's
 * country queues and worker concurrency, BullMQ workers without a limiter, and every call paced by
 * src/quota/governor.ts, on a real Redis. The processor takes a permit, notes when the call would
 * start and waits as long as an upstream call takes (the simulator's latency); no MongoDB, no
 * upstream. It answers what the refresh benchmark cannot on the MongoDB stand-in: how close to Q
 * calls start, and whether any two start closer than the upstream's token bucket allows.
 *
 * One run per Q (`--rates`, default 1,10,20,50,120,300), min(--seconds, 15) s each, burst B = 1. Per
 * country two worker processes are emulated in this process: two Workers on the country queue, each
 * with its own connection and its own QuotaGovernor on a connection of its own (same prefix), so
 * the pace is shared through Redis as between real processes.
 */
import { FairTags } from '../src/fairness/fair-tags.js';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { JobProducer } from '../jobs/queues.js';
import { queueName, queuePrefix } from '../jobs/queue-names.js';
import { buildWorkersConfig, workersEnvSchema } from '../config/workers.js';
import { buildQuotaConfig, quotaEnvSchema } from '../config/quota.js';
import { QuotaGovernor } from '../src/quota/governor.js';
import type { DailyUsage } from '../src/quota/daily-usage.js';
import { startEmbeddedRedis } from '../src/embedded/redis-server.js';
import type { Country } from '../src/core/identifiers.js';
import { parseBenchArgs, type BenchOptions } from './lib/args.js';
import { BenchUnavailableError, cleanUp, cleanupMark, environmentOf, onCleanup, runMain, uniqueName, type Infra } from './lib/infra.js';
import { figure, report, round, type BenchResult, type Figure } from './lib/result.js';
import { percentile } from './lib/stats.js';
import { asinOf } from './lib/seed.js';

const BURST = 1;
/** Worker processes emulated per country. */
const PROCESSES = 2;
/** A run per Q is capped so that the six default rates stay within a couple of minutes. */
const MAX_RUN_S = 15;
/** Timers fire on whole milliseconds of a cached loop clock, so a gap can read ~1-2 ms short without any burst. */
const JITTER_MS = 2;

// The governor counts the day in Redis; its MongoDB copy is only written fire-and-forget (`record`)
// and read when Redis has no count for the day (`read`, answered 0 here as on a fresh day). Neither
// touches the pace, so this stand-in keeps the benchmark free of MongoDB without changing what it measures.
const NO_MONGO_USAGE = { record() {}, settled: async () => {}, read: async () => ({ calls: 0, forced: 0 }) } as unknown as DailyUsage;

interface RedisTarget {
  readonly url: string;
  readonly environment: Record<string, unknown>;
}

/** A call's start (performance.now) and the emulated process that made it. */
/** t: when the call would go on the wire (this process's clock); b: the start the governor booked (Redis's clock); p: the emulated process. */
interface Start {
  readonly t: number;
  readonly b: number;
  readonly p: number;
}

/** Per Q (both countries together): what the process and Redis did meanwhile. */
interface RunStats {
  readonly failedJobs: number;
  /** Above 1: permits told to wait that asked again; far above: Redis round trips pile up. */
  readonly governorEvalsPerPermit: number | null;
  readonly cpuShareOfOneCore: number;
  /** Sampled every 1 ms, so about 1 ms is the floor; the tail is time this event loop could not run timers. */
  readonly eventLoopDelayMs: { readonly p50: number; readonly p99: number; readonly max: number };
}

/** Per Q and country: the starts and the bounds of the run. */
interface CountryRun {
  readonly q: number;
  readonly country: Country;
  readonly concurrency: number;
  readonly starts: Start[];
  /** performance.now() bounds: starts before warmUpEnd are not measured; the share's window ends at `end`. */
  readonly warmUpEnd: number;
  readonly end: number;
}

export async function benchLimiter(opts: BenchOptions, inf?: Infra): Promise<BenchResult> {
  const mark = cleanupMark();
  try {
    // run.ts passes its shared servers; alone, this benchmark needs a Redis only (infra.ts's getInfra would also start MongoDB).
    const target = inf ? { url: inf.redisUrl, environment: environmentOf(inf) } : await redisOnly();
    return await measureLimiter(opts, target);
  } finally {
    await cleanUp(mark);
  }
}

/** REDIS_URL, else a dedicated redis-server child (as infra.ts does), which only this run's commands reach. */
async function redisOnly(): Promise<RedisTarget> {
  let url = process.env.REDIS_URL || undefined;
  const source = url ? 'REDIS_URL' : 'dedicated redis-server';
  if (!url) {
    const server = await startEmbeddedRedis().catch((err: Error) => {
      throw new BenchUnavailableError(`no Redis for the benchmark: ${err.message}`);
    });
    onCleanup('dedicated redis-server', () => server.stop());
    url = server.url;
  }
  const probe = new Redis(url, { maxRetriesPerRequest: 1 });
  const version = await probe
    .info('server')
    .then((info) => /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown')
    .finally(() => probe.disconnect());
  const environment = {
    node: process.version,
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? null,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
  };
  return { url, environment: { ...environment, redis: { source, version } } };
}

/** EVAL calls so far: the governor's scripts (BullMQ's go through EVALSHA), to count round trips per permit. */
async function evalCalls(r: Redis): Promise<number> {
  return Number(/^cmdstat_eval:calls=(\d+)/m.exec(await r.info('commandstats'))?.[1] ?? 0);
}

async function runAt(
  q: number,
  seconds: number,
  opts: BenchOptions,
  url: string,
  prefix: string,
): Promise<{ runs: CountryRun[]; stats: RunStats }> {
  const countries = opts.countries as Country[];
  // The product's own sizing and quota settings for QUOTA_RPS = Q; the day is made big enough never to bind.
  const quotaConfig = buildQuotaConfig(
    quotaEnvSchema.parse({ QUOTA_RPS: String(q), QUOTA_BURST: String(BURST), QUOTA_PER_DAY: String(Math.ceil(q * 86_400) + 1_000) }),
  ).config!;
  const config = buildWorkersConfig(workersEnvSchema.parse({}), quotaConfig).config!;
  const connections: Redis[] = [];
  const connect = (): Redis => {
    const r = new Redis(url, { maxRetriesPerRequest: null });
    connections.push(r);
    return r;
  };
  const admin = connect();
  const producerConnection = connect();
  const producer = new JobProducer(producerConnection, prefix, pino({ level: 'silent' }), new FairTags(producerConnection, prefix));
  // More jobs than the run can start (with room for the ones held by workers), so the queue never runs dry.
  for (const country of countries) {
    const perCountry = Math.ceil(q * seconds * 1.2) + PROCESSES * config.concurrency(country) + 10;
    const jobs = Array.from({ length: perCountry }, (_, i) => ({
      name: 'refresh.p0',
      data: { country, asins: Array.from({ length: 10 }, (_, k) => asinOf(i * 10 + k)) },
      opts: { priority: 4 },
    }));
    for (let i = 0; i < jobs.length; i += 1_000) await producer.queue(country).addBulk(jobs.slice(i, i + 1_000));
  }

  const starts = new Map<Country, Start[]>(countries.map((c) => [c, []]));
  let recording = true;
  let failed = 0;
  const governors: QuotaGovernor[] = [];
  const workers: Worker[] = [];
  for (const country of countries) {
    for (let p = 0; p < PROCESSES; p++) {
      const governor = new QuotaGovernor(connect(), prefix, {
        ...quotaConfig,
        usage: NO_MONGO_USAGE,
      });
      governors.push(governor);
      const worker = new Worker(
        queueName(country),
        async () => {
          const permit = await governor.permit(country, 'refresh');
          // The instant the upstream call would go on the wire: what the upstream's bucket sees.
          const t = performance.now();
          if (recording) starts.get(country)!.push({ t, b: permit.bookedAt, p });
          await sleep(opts.latencyMs);
        },
        {
          connection: connect(),
          prefix: queuePrefix(prefix, country),
          concurrency: config.concurrency(country),
          removeOnComplete: { count: 100 },
        },
      );
      worker.on('failed', () => void (recording && failed++));
      worker.on('error', (err) => console.error(`limiter: worker ${country}: ${err.message}`));
      workers.push(worker);
    }
  }

  const evalsBefore = await evalCalls(admin);
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  const cpuBefore = process.cpuUsage();
  const t0 = performance.now();
  // The first calls of a run wait for job fetches and the day's seed; 3/Q s lets slow rates reach their pace too.
  const warmUpEnd = t0 + Math.max(1_000, 3_000 / q);
  await sleep(seconds * 1_000);
  recording = false;
  const end = performance.now();
  const cpu = process.cpuUsage(cpuBefore);
  loopDelay.disable();
  const evals = (await evalCalls(admin)) - evalsBefore;
  // Closing the governors first rejects the permits still waiting, so the forced close does not wait on them.
  for (const g of governors) g.close();
  await Promise.all(workers.map((w) => w.close(true)));
  await producer.close();
  for (const r of connections) r.disconnect();

  const all = [...starts.values()].reduce((n, s) => n + s.length, 0);
  return {
    runs: countries.map((country) => ({
      q,
      country,
      concurrency: config.concurrency(country),
      starts: starts.get(country)!,
      warmUpEnd,
      end,
    })),
    stats: {
      failedJobs: failed,
      governorEvalsPerPermit: all ? round(evals / all, 2) : null,
      cpuShareOfOneCore: round((cpu.user + cpu.system) / 1_000 / (end - t0), 3),
      eventLoopDelayMs: {
        p50: round(loopDelay.percentile(50) / 1e6, 2),
        p99: round(loopDelay.percentile(99) / 1e6, 2),
        max: round(loopDelay.max / 1e6, 2),
      },
    },
  };
}

/** Most starts within any half-open second [t, t + 1000 ms): a GCRA with burst B admits at most Q + B. */
function busiestSecond(sorted: readonly number[]): number {
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j]! < sorted[i]! + 1_000) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

function analyse(run: CountryRun) {
  const keep = run.starts.filter(({ t }) => t >= run.warmUpEnd).sort((a, b) => a.t - b.t);
  const s = keep.map(({ t }) => t);
  // From the first measured start to the end of the run: a pace that starts late or stalls lowers the share.
  const windowS = (run.end - (s[0] ?? run.warmUpEnd)) / 1_000;
  const spacing = 1_000 / run.q;
  const gaps = s.slice(1).map((t, i) => t - s[i]!);
  const ms = (v: number | null): number | null => (v === null ? null : round(v, 2));
  // The governor's own record: the starts it booked, on Redis's clock, for every process together.
  const booked = keep.map(({ b }) => b).sort((x, y) => x - y);
  const bookedGaps = booked.slice(1).map((b, i) => b - booked[i]!);
  return {
    // 1e-3 ms: the script keeps times to 0.1 µs; anything shorter than an interval by more is a real burst.
    bookedCloser: bookedGaps.filter((g) => g < spacing - 1e-3).length,
    bookedBusiest1s: busiestSecond(booked),
    starts: s.length,
    windowS: round(windowS, 3),
    share: s.length / (run.q * windowS),
    // B = 1: consecutive starts must be at least 1/Q apart; the allowance absorbs timer rounding only.
    closer: gaps.filter((g) => g < spacing - JITTER_MS).length,
    closerStrict: gaps.filter((g) => g < spacing).length,
    // Two starts of the same process too close point at its timers; of two processes, at the hand-over between them.
    closerSameProcess: gaps.filter((g, i) => g < spacing - JITTER_MS && keep[i]!.p === keep[i + 1]!.p).length,
    gapMinMs: ms(gaps.length ? Math.min(...gaps) : null),
    gapP50Ms: ms(percentile(gaps, 50)),
    gapP99Ms: ms(percentile(gaps, 99)),
    busiest1s: busiestSecond(s),
    busiestLimit: Math.floor(run.q) + BURST,
    concurrency: `${PROCESSES} x ${run.concurrency}`,
  };
}

async function measureLimiter(opts: BenchOptions, target: RedisTarget): Promise<BenchResult> {
  const startedAt = new Date().toISOString();
  const base = uniqueName('swb_lim');
  const seconds = Math.min(opts.seconds, MAX_RUN_S);
  const admin = new Redis(target.url, { maxRetriesPerRequest: 3 });
  onCleanup(`Redis keys ${base}*`, async () => {
    for await (const keys of admin.scanStream({ match: `${base}*`, count: 1_000 }) as AsyncIterable<string[]>)
      if (keys.length) await admin.del(...keys);
    admin.disconnect();
  });

  const figures: Figure[] = [];
  const details: Record<string, unknown> = {};
  for (const [i, q] of opts.rates.entries()) {
    // A prefix per Q: every run starts with an empty queue and a fresh pace (tat) and day count.
    const { runs, stats } = await runAt(q, seconds, opts, target.url, `${base}_${i}`);
    details[`Q=${q}`] = stats;
    for (const run of runs) {
      const a = analyse(run);
      details[`Q=${q} ${run.country}`] = { ...a, share: round(a.share, 4) };
      figures.push(
        figure(
          `Q=${q} ${run.country}: share of Q`,
          a.share,
          '',
          { op: '>=', value: 0.99, source: 'issue' },
          `${a.starts} starts in ${round(a.windowS, 2)} s`,
        ),
        figure(
          `Q=${q} ${run.country}: booked starts closer than 1/Q (B=1)`,
          a.bookedCloser,
          'gaps',
          { op: '==', value: 0, source: 'issue' },
          `busiest second ${a.bookedBusiest1s} of <= ${a.busiestLimit}`,
        ),
        figure(
          `Q=${q} ${run.country}: booked starts in the busiest second, over Q+B`,
          Math.max(0, a.bookedBusiest1s - a.busiestLimit),
          'starts',
          { op: '==', value: 0, source: 'issue' },
        ),
        // The same starts as this process's timers released them: what the upstream sees before network jitter.
        figure(
          `Q=${q} ${run.country}: released starts closer than 1/Q-${JITTER_MS}ms (timer jitter)`,
          a.closer,
          'gaps',
          null,
          `strict ${a.closerStrict}, min ${a.gapMinMs} ms`,
        ),
      );
      console.log(
        `limiter: Q=${q} ${run.country}: share ${round(a.share, 3)} (${a.starts} starts in ${round(a.windowS, 2)} s), booked gaps < 1/Q: ${a.bookedCloser}, booked busiest 1 s ${a.bookedBusiest1s}, ` +
          `gaps < ${round(1_000 / q - JITTER_MS, 2)} ms: ${a.closer} (strict ${a.closerStrict}), gap min ${a.gapMinMs} p50 ${a.gapP50Ms} p99 ${a.gapP99Ms} ms, ` +
          `busiest 1 s ${a.busiest1s} of <= ${a.busiestLimit}, same-process short ${a.closerSameProcess}, concurrency ${a.concurrency}, ` +
          `loop delay p99 ${stats.eventLoopDelayMs.p99} ms, evals/permit ${stats.governorEvalsPerPermit}`,
      );
    }
  }
  return {
    name: 'limiter',
    startedAt,
    environment: target.environment,
    parameters: {
      rates: opts.rates,
      secondsPerRate: seconds,
      countries: opts.countries,
      callMs: opts.latencyMs,
      burst: BURST,
      processesPerCountry: PROCESSES,
      jitterAllowanceMs: JITTER_MS,
    },
    figures,
    details,
    notes: [
      'no MongoDB and no upstream: the processor only waits as long as an upstream call takes, so this is the ceiling of queues + governor, not of the product',
      `${PROCESSES} worker processes per country are emulated in one Node process (one event loop for all of them), each Worker with its own connection and QuotaGovernor`,
      'share = starts / (Q x window), window from the first start after the warm-up to the end of the run: a steady pace reads a little above 1 (the first start is counted)',
    ],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const opts = parseBenchArgs();
  await runMain('limiter', (120 + opts.rates.length * (Math.min(opts.seconds, MAX_RUN_S) + 60)) * 1000, async () =>
    report(await benchLimiter(opts)),
  );
}
