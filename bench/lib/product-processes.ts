/**
 * The product as bench:tenants runs it: the simulator, two workers and the api as separate
 * processes started with the CLI (as bench/refresh.ts does), then the scheduler, whose start is the
 * run's t0; and the readings of every counter a window's figures are the difference of.
 */
import { sampleProc, spawnCli, type Child, type ProcSample } from './proc.js';
import { simulatorCalls, workerCounters, type CountryCalls, type WorkerCounters } from './upstream-probe.js';

export interface Product {
  readonly simUrl: string;
  readonly apiUrl: string;
  /** Each worker's /metrics, on a port of its own (METRICS_PORT=0). */
  readonly metricsUrls: readonly string[];
  readonly children: Child[];
}

export async function startProduct(label: string, env: Record<string, string>, simEnv: Record<string, string>): Promise<Product> {
  const sim = spawnCli(`simulator (${label})`, ['simulator'], { ...env, ...simEnv });
  const simUrl = String((await sim.waitForLog((l) => l.msg === 'upstream simulator listening')).url);
  const withSim = { ...env, SIMULATOR_URL: simUrl };
  const workers = [1, 2].map((i) => spawnCli(`worker-${i} (${label})`, ['worker'], { ...withSim, METRICS_PORT: '0' }));
  const api = spawnCli(`api (${label})`, ['api'], { ...withSim, PORT: '0' });
  const [metricsUrls, apiUrl] = await Promise.all([
    Promise.all(workers.map(async (w) => String((await w.waitForLog((l) => l.msg === 'metrics and health listening')).url))),
    api.waitForLog((l) => l.msg === 'api listening').then((l) => String(l.url)),
  ]);
  return { simUrl, apiUrl, metricsUrls, children: [sim, ...workers, api] };
}

/** Starts the scheduler: its first planning pass is the start of the run. */
export async function startScheduler(label: string, env: Record<string, string>): Promise<Child> {
  const scheduler = spawnCli(`scheduler (${label})`, ['scheduler'], env);
  await scheduler.waitForLog((l) => l.msg === 'scheduler started');
  return scheduler;
}

export interface Readings {
  readonly sim: Record<string, CountryCalls>;
  readonly workers: WorkerCounters;
  /** CPU and memory of each process (the product's, the database's, the benchmark's own). */
  readonly procs: Record<string, ProcSample | null>;
}

/** A reader of every counter at once, for the processes named in `watched`. */
export function readerOf(product: Product, watched: readonly { name: string; pid: number }[]): () => Promise<Readings> {
  return async () => {
    const [sim, workers] = await Promise.all([simulatorCalls(product.simUrl), workerCounters(product.metricsUrls)]);
    return { sim, workers, procs: Object.fromEntries(watched.map((w) => [w.name, sampleProc(w.pid)])) };
  };
}
