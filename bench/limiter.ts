/**
 * The queue layer's ceiling (`npm run bench:limiter`): the product's own queues, job options,
 * limiter (workers/runner.ts limiterFor) and worker concurrency, on a real Redis, with a processor
 * that only waits as long as an upstream call takes (the simulator's latency) and touches no
 * MongoDB. It answers one question the refresh benchmark cannot answer on the MongoDB stand-in:
 * how close to the quota can the workers start calls when nothing else slows them down?
 *
 * Figures per run: calls started per second per country as a share of Q (the refresh target of
 * 95 % of the limit needs at least that much here), the gaps between starts (a gap below 1000/Q ms
 * is a burst that a token bucket holding one token would answer with 429).
 */
import { pathToFileURL } from 'node:url';
import { Worker } from 'bullmq';
import { pino } from 'pino';
import { JobProducer, queueName } from '../jobs/queues.js';
import { buildWorkersConfig, workersEnvSchema } from '../config/workers.js';
import { limiterFor } from '../workers/runner.js';
import type { Country } from '../src/catalog/identifiers.js';
import { parseBenchArgs, type BenchOptions } from './lib/args.js';
import { environmentOf, ownRedis, runMain, uniqueName, withOwnCleanup, type Infra } from './lib/infra.js';
import { figure, report, round, type BenchResult, type Figure } from './lib/result.js';
import { asinOf } from './lib/seed.js';

const WARM_UP_MS = 1_000;

export function benchLimiter(opts: BenchOptions, inf?: Infra): Promise<BenchResult> {
  return withOwnCleanup(inf, (infra) => measureLimiter(opts, infra));
}

function quantile(sorted: readonly number[], q: number): number | null {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : null;
}

async function measureLimiter(opts: BenchOptions, inf: Infra): Promise<BenchResult> {
  const startedAt = new Date().toISOString();
  const prefix = uniqueName('swb_lim');
  const redis = await ownRedis(inf, prefix);
  const connection = redis.duplicate({ maxRetriesPerRequest: null });
  const countries = opts.countries as Country[];
  const workersConfig = buildWorkersConfig(workersEnvSchema.parse({ QUOTA_RPS: String(opts.quota) })).config!;
  const producer = new JobProducer(connection, prefix, pino({ level: 'silent' }));
  const seconds = Math.min(opts.seconds, 60);

  // More jobs than the run can start, so the queue never runs dry.
  const perCountry = Math.ceil(opts.quota * seconds * 1.5) + 10;
  for (const country of countries) {
    const jobs = Array.from({ length: perCountry }, (_, i) => ({
      name: 'refresh.p0',
      data: { country, asins: Array.from({ length: 10 }, (_, k) => asinOf(i * 10 + k)) },
      opts: { priority: 4 },
    }));
    for (let i = 0; i < jobs.length; i += 1_000) await producer.queue(country).addBulk(jobs.slice(i, i + 1_000));
  }

  const starts = new Map<Country, number[]>(countries.map((c) => [c, []]));
  const workers = countries.map((country) => new Worker(queueName(country), async () => {
    starts.get(country)!.push(performance.now());
    await new Promise((r) => setTimeout(r, opts.latencyMs));
  }, { connection, prefix, concurrency: workersConfig.concurrency(country), limiter: limiterFor(opts.quota), removeOnComplete: { count: 100 } }));
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1_000));
  await Promise.all(workers.map((w) => w.close(true)));
  await producer.close();
  connection.disconnect();

  const figures: Figure[] = [];
  const details: Record<string, unknown> = {};
  const spacing = 1_000 / opts.quota;
  for (const country of countries) {
    const s = starts.get(country)!.filter((t) => t - t0 >= WARM_UP_MS);
    const rate = s.length > 1 ? (s.length - 1) / ((s.at(-1)! - s[0]!) / 1_000) : 0;
    const gaps = s.slice(1).map((t, i) => t - s[i]!).sort((a, b) => a - b);
    // Timers and Redis round trips round a gap down by a millisecond or so; only real bursts count.
    const bursts = gaps.filter((g) => g < spacing - 2).length;
    figures.push(
      figure(`${country}: calls started per second`, rate, 'calls/s', { op: '>=', value: 0.95 * opts.quota, source: 'issue' }, `Q = ${opts.quota}`),
      figure(`${country}: share of the quota`, rate / opts.quota, '', { op: '>=', value: 0.95, source: 'issue' }),
      figure(`${country}: starts closer than 1/Q`, bursts, 'gaps', { op: '==', value: 0, source: 'ours' }),
    );
    const gapP50Ms = round(quantile(gaps, 0.5) ?? 0, 1);
    details[country] = { starts: s.length, gapP50Ms, gapP99Ms: round(quantile(gaps, 0.99) ?? 0, 1), gapMinMs: round(gaps[0] ?? 0, 1), concurrency: workersConfig.concurrency(country), limiter: limiterFor(opts.quota) };
    console.log(`limiter: ${country}: ${round(rate, 2)} calls/s of ${opts.quota} (gap p50 ${gapP50Ms} ms)`);
  }
  return {
    name: 'limiter',
    startedAt,
    environment: environmentOf(inf),
    parameters: { quota: opts.quota, seconds, countries, callMs: opts.latencyMs, jobsPerCountry: perCountry },
    figures,
    details,
    notes: [
      'no MongoDB: the processor only waits as long as an upstream call takes, so this is the ceiling of the queue layer, not of the product',
      `the limiter spaces starts by 1.01/Q s, so its own ceiling is ${round(100 / 1.01, 1)} % of Q`,
    ],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const opts = parseBenchArgs();
  await runMain('limiter', (300 + Math.min(opts.seconds, 60)) * 1000, async () => report(await benchLimiter(opts)));
}
