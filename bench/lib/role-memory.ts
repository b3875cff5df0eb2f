/**
 * Peak memory of each role on a catalogue of a given size (bench:plan, after its ticks at that
 * size): the simulator, two workers, the api and the scheduler started with the CLI on the
 * benchmark's database, the workers refreshing what the scheduler plans at Q calls a second, the api
 * answering a stream of requests nobody asked for before (world pages deep in the list, searches,
 * products by ASIN, with its caches on as shipped), for `seconds`. Peak RSS is the kernel's VmHWM
 * of each process at the end. The roles run as shipped, compiled (`node dist/...`): through tsx
 * each would also hold the compiler and its loader thread.
 */
import type { Connection } from 'mongoose';
import { generateAppKey, parseAppKey } from '../../config/app-key.js';
import { UserService } from '../../src/users/service.js';
import { productEnv, uniqueName, ownRedis, type Infra } from './infra.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ROOT, sampleProc, spawnCli, type Child } from './proc.js';
import { asinOf } from './seed.js';

export interface RoleMemory {
  readonly size: number;
  /** Peak RSS (MiB) per process: api, scheduler, worker-1, worker-2, simulator. */
  readonly peakRssMiB: Record<string, number | null>;
  readonly apiRequests: number;
  readonly apiErrors: number;
  /** The failed answers by status. */
  readonly apiFailures: Record<string, number>;
}

/** The product's roles, whose peaks the targets are for (the simulator stands in for the upstream). */
export const ROLES = ['api', 'scheduler', 'worker-1', 'worker-2'] as const;

const CONNECTIONS = 8;
const WORDS = ['wireless', 'mouse', 'cable', 'model', 'acme', 'pro', 'mini', 'usb'];

/** Compiles the product as `npm run build` does, so that the roles measured are today's code. */
export async function buildForMemory(): Promise<void> {
  await promisify(execFile)('npm', ['run', '-s', 'build'], { cwd: ROOT });
}

/** The i-th request of the stream: each a URL the api has not answered before, as far as can be. */
function pathOf(i: number, size: number): string {
  switch (i % 3) {
    case 0:
      return `/api/world?country=JP&limit=50&page=${1 + (i % 20)}`;
    case 1:
      return `/api/world?search=${WORDS[i % WORDS.length]}%20${i}&limit=20`;
    default:
      return `/api/world/asin/${asinOf((i * 7_919) % size)}?country=JP`;
  }
}

export async function measureRoleMemory(
  inf: Infra,
  db: { readonly uri: string; readonly conn: Connection },
  size: number,
  opts: { readonly quota: number; readonly seconds: number },
): Promise<RoleMemory> {
  const prefix = uniqueName('swb_mem');
  await ownRedis(inf, prefix);
  const appKeyText = generateAppKey();
  const { token } = await new UserService(db.conn, parseAppKey(appKeyText)!).create({
    name: `memory${size}`,
    email: `memory${size}@bench.example.com`,
  });
  const env: Record<string, string> = {
    ...productEnv(inf, db, prefix, appKeyText, ['JP']),
    LOG_LEVEL: 'warn',
    QUOTA_RPS: String(opts.quota),
    QUOTA_PER_DAY: '1000000000',
    SHUTDOWN_TIMEOUT_MS: '8000',
    WORKER_SHUTDOWN_MS: '3s',
  };
  const children: Child[] = [];
  try {
    const sim = spawnCli(
      'simulator',
      ['simulator'],
      { ...env, LOG_LEVEL: 'info', SIMULATOR_QUOTA_RPS: String(opts.quota), SIMULATOR_QUOTA_PER_DAY: '1000000000' },
      [],
      'dist',
    );
    children.push(sim);
    const simUrl = String((await sim.waitForLog((l) => l.msg === 'upstream simulator listening')).url);
    const withSim = { ...env, SIMULATOR_URL: simUrl };
    const api = spawnCli(
      'api',
      ['api'],
      { ...withSim, LOG_LEVEL: 'info', PORT: '0', RATE_LIMIT_API: '1000000', DIRECTORY_RATE_LIMIT: '1000000' },
      [],
      'dist',
    );
    children.push(api);
    const apiUrl = String((await api.waitForLog((l) => l.msg === 'api listening', 300_000)).url);
    const workers = [1, 2].map((i) =>
      spawnCli(`worker-${i}`, ['worker'], { ...withSim, LOG_LEVEL: 'info', METRICS_PORT: '0' }, [], 'dist'),
    );
    children.push(...workers);
    await Promise.all(workers.map((w) => w.waitForLog((l) => l.msg === 'metrics and health listening', 300_000)));
    const scheduler = spawnCli('scheduler', ['scheduler'], { ...withSim, LOG_LEVEL: 'info' }, [], 'dist');
    children.push(scheduler);
    await scheduler.waitForLog((l) => l.msg === 'scheduler started', 300_000);

    let next = 0;
    let errors = 0;
    const failures = new Map<string, number>();
    const until = Date.now() + opts.seconds * 1_000;
    const loop = async (): Promise<void> => {
      while (Date.now() < until) {
        const res = await fetch(apiUrl + pathOf(next++, size), { headers: { authorization: `Bearer ${token}` } }).catch(() => null);
        if (!res || res.status >= 500) {
          errors++;
          const what = res ? String(res.status) : 'no answer';
          failures.set(what, (failures.get(what) ?? 0) + 1);
        }
        await res?.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, loop));

    const named: Record<string, Child> = { api, scheduler, 'worker-1': workers[0]!, 'worker-2': workers[1]!, simulator: sim };
    const peakRssMiB = Object.fromEntries(Object.entries(named).map(([name, c]) => [name, sampleProc(c.pid)?.peakRssMiB ?? null]));
    return { size, peakRssMiB, apiRequests: next, apiErrors: errors, apiFailures: Object.fromEntries(failures) };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}
