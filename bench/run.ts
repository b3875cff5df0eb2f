/**
 * `npm run bench`: the benchmarks one after the other (limiter, refresh + update, plan, day, api, adaptive), on one MongoDB and one Redis (see
 * lib/infra.ts), each with a database and a key prefix of its own. Flags go to all of them
 * (`npm run bench -- --seconds 20 --asins 4000 --sizes 10000,100000`). Each prints its figures and
 * its RESULT line and writes bench/results/<name>.json; the last line is RESULT with all of them.
 */
import { parseBenchArgs } from './lib/args.js';
import { getInfra, runMain } from './lib/infra.js';
import { writeFile } from 'node:fs/promises';
import { report, RESULTS_DIR, type BenchResult } from './lib/result.js';
import { benchRefresh } from './refresh.js';
import { benchPlan } from './plan.js';
import { benchDay } from './day.js';
import { benchApi } from './api.js';
import { benchLimiter } from './limiter.js';
import { benchAdaptive } from './adaptive.js';

const opts = parseBenchArgs();
const budgetS =
  300 +
  Math.min(opts.seconds, 60) +
  600 +
  opts.seconds +
  opts.asins / 50 +
  600 +
  opts.sizes.reduce((a, b) => a + b, 0) / 500 +
  3_000 +
  900 +
  opts.apiSeconds * 5 +
  1_800;

await runMain('all', budgetS * 1000, async () => {
  const inf = await getInfra();
  const all: Record<string, BenchResult> = {};
  // First, on an idle machine: the queue layer's own ceiling, with no MongoDB in the way.
  all.limiter = await benchLimiter(opts, inf);
  await report(all.limiter);
  const { refresh, update } = await benchRefresh(opts, inf);
  await report(update);
  await report(refresh);
  all.refresh = refresh;
  all.update = update;
  // Each benchmark removes its processes and data before returning, so the next one starts on
  // an idle machine; the MongoDB and Redis servers stay until the end.
  all.plan = await benchPlan(opts, inf);
  await report(all.plan);
  all.day = await benchDay(opts, inf);
  await report(all.day);
  all.api = await benchApi(opts, inf);
  await report(all.api);
  // Last: the same simulated day planned twice on one catalogue, fixed then adaptive scheduling.
  all.adaptive = await benchAdaptive(opts, inf);
  await report(all.adaptive);
  await writeFile(`${RESULTS_DIR}all.json`, JSON.stringify(all, null, 2) + '\n');
  console.log(`RESULT ${JSON.stringify(all)}`);
});
