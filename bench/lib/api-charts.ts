/**
 * bench:api's chart scenario: one account asks for 1,000 price charts with distinct parameters,
 * CHART_FLOOD.concurrency at a time, while another account's GET /version and world list are timed
 * (two loops, one request after another). The targets: their p99 ≤ 50 ms while the charts
 * are drawn, and the renders within the account's budget (CHART_RENDERS_PER_MINUTE a minute); no
 * answer a 5xx but the queue's 503. The same two loops run for a few seconds before the flood, so a
 * busy machine shows apart from the flood's own cost.
 */
import type { Connection } from 'mongoose';
import { UserService } from '../../src/users/service.js';
import { asinOf, insertChunks } from './seed.js';
import { metricsText } from './metrics-text.js';
import { sampleProc } from './proc.js';
import { percentile } from './stats.js';
import { figure, round, type Figure } from './result.js';

export const CHART_FLOOD = {
  requests: 1_000,
  concurrency: 12,
  /** The first products of the seeded catalogue, each with a year of price history. */
  products: 20,
  pointsPerProduct: 1_000,
  quietMs: 5_000,
} as const;
const TARGET_P99_MS = 50;
const DAY_MS = 86_400_000;

export interface ChartFloodSetup {
  readonly products: readonly { readonly country: string; readonly asin: string }[];
  /** The account whose requests are timed. */
  readonly lightToken: string;
}

/** Writes the charted products' history (they are the catalogue's first ones) and makes the timed account. */
export async function prepareChartFlood(
  conn: Connection,
  appKey: Buffer,
  countries: readonly string[],
  catalogue: number,
  now: number,
): Promise<ChartFloodSetup> {
  const products = Array.from({ length: Math.min(CHART_FLOOD.products, catalogue) }, (_, i) => ({
    country: countries[i % countries.length]!,
    asin: asinOf(i),
  }));
  const n = CHART_FLOOD.pointsPerProduct;
  await insertChunks(conn, 'history', products.length * n, (k) => {
    const p = products[Math.floor(k / n)]!;
    const i = k % n;
    const at = new Date(now - ((n - i) * 365 * DAY_MS) / n);
    const out = i % 40 === 13;
    return {
      _id: `${p.country}.${p.asin}.${at.getTime()}`,
      country: p.country,
      asin: p.asin,
      at,
      price: out ? null : 1_000 + ((i * 37 + k) % 2_000),
      currency: out ? null : p.country === 'JP' ? 'JPY' : 'USD',
      availability: out ? 'out_of_stock' : 'in_stock',
      buybox: !out,
      rank: 100 + (i % 50),
      expires_at: new Date(now + 30 * DAY_MS),
    };
  });
  const { token } = await new UserService(conn, appKey).create({ name: 'bench light', email: 'light@bench.example.com' });
  return { products, lightToken: token };
}

interface Timed {
  readonly ms: number;
  readonly status: number;
}

async function timedGet(url: string, token: string): Promise<Timed> {
  const started = performance.now();
  try {
    const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(60_000) });
    await res.arrayBuffer();
    return { ms: performance.now() - started, status: res.status };
  } catch {
    return { ms: performance.now() - started, status: 0 };
  }
}

/** Requests `path` one after another until `stop` is aborted. */
async function loop(url: string, token: string, stop: AbortSignal): Promise<Timed[]> {
  const out: Timed[] = [];
  while (!stop.aborted) out.push(await timedGet(url, token));
  return out;
}

async function renderedCharts(apiUrl: string): Promise<number> {
  const text = await metricsText(apiUrl);
  return [...text.matchAll(/^shelfwatch_price_charts_total\{[^}]*outcome="rendered"[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

/** Distinct (product, days, width, height) requests, from a fixed seed. */
function chartQueries(setup: ChartFloodSetup): string[] {
  let seed = 2026;
  const rand = (lo: number, hi: number) => lo + ((seed = (seed * 48271) % 2147483647) % (hi - lo + 1));
  const seen = new Set<string>();
  while (seen.size < CHART_FLOOD.requests) {
    const p = setup.products[rand(0, setup.products.length - 1)]!;
    seen.add(
      `/api/world/asin/${p.asin}/history.svg?country=${p.country}&days=${rand(1, 365)}&width=${rand(300, 1600)}&height=${rand(150, 800)}`,
    );
  }
  return [...seen];
}

const p99 = (t: readonly Timed[]) =>
  percentile(
    t.map((x) => x.ms),
    99,
  );

export async function runChartFlood(
  setup: ChartFloodSetup,
  api: { url: string; pid: number },
  heavyToken: string,
  listPath: string,
  budgetPerMinute: number,
): Promise<{ figures: Figure[]; details: Record<string, unknown>; notes: string[] }> {
  const light = { version: `${api.url}/version`, list: `${api.url}${listPath}` };
  // Warm: the route's first answers pay for lazy set-up.
  await timedGet(light.version, setup.lightToken);
  await timedGet(light.list, setup.lightToken);

  const quiet = new AbortController();
  const quietLoops = Promise.all([loop(light.version, setup.lightToken, quiet.signal), loop(light.list, setup.lightToken, quiet.signal)]);
  await new Promise((r) => setTimeout(r, CHART_FLOOD.quietMs));
  quiet.abort();
  const [quietVersion, quietList] = await quietLoops;

  const queries = chartQueries(setup);
  const renderedBefore = await renderedCharts(api.url);
  const cpuBefore = sampleProc(api.pid);
  const stop = new AbortController();
  const timed = Promise.all([loop(light.version, setup.lightToken, stop.signal), loop(light.list, setup.lightToken, stop.signal)]);
  const charts: Timed[] = [];
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CHART_FLOOD.concurrency }, async () => {
      while (next < queries.length) charts.push(await timedGet(`${api.url}${queries[next++]!}`, heavyToken));
    }),
  );
  const elapsedMs = performance.now() - started;
  stop.abort();
  const [version, list] = await timed;
  const cpuAfter = sampleProc(api.pid);
  const rendered = (await renderedCharts(api.url)) - renderedBefore;

  const statuses: Record<string, number> = {};
  for (const c of charts) statuses[c.status] = (statuses[c.status] ?? 0) + 1;
  const failed = charts.filter((c) => c.status === 0 || (c.status >= 500 && c.status !== 503)).length;
  // The budget's windows are a minute from an account's first render: a flood of E ms meets at most ⌈E / 1 min⌉ of them.
  const allowed = budgetPerMinute * Math.max(1, Math.ceil(elapsedMs / 60_000));
  const lightFailed = [...version, ...list].filter((t) => t.status !== 200).length;
  const figures = [
    figure('chart flood: light /version p99', p99(version), 'ms', { op: '<=', value: TARGET_P99_MS, source: 'issue' }),
    figure('chart flood: light world list p99', p99(list), 'ms', { op: '<=', value: TARGET_P99_MS, source: 'issue' }),
    figure('chart flood: renders', rendered, 'charts', { op: '<=', value: allowed, source: 'issue' }, `budget ${budgetPerMinute}/min`),
    figure('chart flood: 5xx but 503, or failed', failed, 'responses', { op: '==', value: 0, source: 'issue' }),
    figure('chart flood: light non-200', lightFailed, 'responses', { op: '==', value: 0, source: 'ours' }),
  ];
  const details = {
    requests: charts.length,
    concurrency: CHART_FLOOD.concurrency,
    seconds: round(elapsedMs / 1000, 1),
    statuses,
    rendered,
    allowedRenders: allowed,
    chartP50Ms: round(
      percentile(
        charts.map((c) => c.ms),
        50,
      ) ?? 0,
      1,
    ),
    chartP99Ms: round(
      percentile(
        charts.map((c) => c.ms),
        99,
      ) ?? 0,
      1,
    ),
    apiCpuPerChartRequestMs: cpuBefore && cpuAfter ? round(((cpuAfter.cpuS - cpuBefore.cpuS) * 1000) / charts.length, 2) : null,
    apiCpuShareOfOneCore: cpuBefore && cpuAfter ? round((cpuAfter.cpuS - cpuBefore.cpuS) / (elapsedMs / 1000), 2) : null,
    light: {
      during: {
        versionRequests: version.length,
        versionP50Ms: round(
          percentile(
            version.map((t) => t.ms),
            50,
          ) ?? 0,
          1,
        ),
        listRequests: list.length,
        listP50Ms: round(
          percentile(
            list.map((t) => t.ms),
            50,
          ) ?? 0,
          1,
        ),
      },
      quiet: {
        versionRequests: quietVersion.length,
        versionP99Ms: round(p99(quietVersion) ?? 0, 1),
        listRequests: quietList.length,
        listP99Ms: round(p99(quietList) ?? 0, 1),
      },
    },
  };
  console.log(
    `api: chart flood: ${charts.length} charts in ${round(elapsedMs / 1000, 1)} s (${JSON.stringify(statuses)}), ${rendered} rendered; light p99 /version ${round(p99(version) ?? 0, 1)} ms, list ${round(p99(list) ?? 0, 1)} ms (quiet: ${details.light.quiet.versionP99Ms}, ${details.light.quiet.listP99Ms})`,
  );
  const notes = [
    `chart flood: the light account's requests are timed one after another in two loops (/version and ${listPath}); the api's render threads (CHART_RENDER_THREADS) share the machine's cores with its event loop, the stand-in and this process`,
  ];
  return { figures, details, notes };
}
