import { loadConfig, type Config } from '../../config/env.js';
import type { Country } from '../../src/core/identifiers.js';
import { createLogger } from '../../src/logger.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/server.js';
import { createUpstream, createUpstreamShared, type UpstreamShared } from '../../src/upstream/factory.js';
import type { UpstreamPort } from '../../src/upstream/port.js';

/** A clock moved by hand, shared by the simulator and the client when a test wants that. */
export class ManualClock {
  constructor(public t = Date.UTC(2026, 5, 1, 12, 0, 0)) {}
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

export interface SimHarness {
  readonly sim: RunningSimulator;
  readonly config: Config;
  readonly clock: ManualClock;
  readonly shared: UpstreamShared;
  /** A port on the simulator; `clientClock` defaults to the simulator's clock. */
  port(country: Country, clientClock?: ManualClock): UpstreamPort;
  close(): Promise<void>;
}

/** The base environment of these tests: quota high enough not to interfere unless a test sets it. */
export function simEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { LOG_LEVEL: 'silent', SIMULATOR_QUOTA_RPS: '100000', SIMULATOR_QUOTA_PER_DAY: '100000000', ...extra };
}

export async function startHarness(extra: Record<string, string> = {}, clock = new ManualClock()): Promise<SimHarness> {
  const config = loadConfig(simEnv(extra));
  const sim = await startSimulator(config.upstream.simulator, createLogger(config), { now: clock.now, random: () => 0.5 });
  const shared = createUpstreamShared();
  return {
    sim,
    config,
    clock,
    shared,
    port: (country, clientClock = clock) => createUpstream(config, country, { simulatorUrl: sim.url, shared, now: clientClock.now }),
    async close() {
      await shared.close();
      await sim.close();
    },
  };
}

/** Sum of catalog calls the simulator received, over countries and operations. */
export function totalCalls(sim: RunningSimulator): number {
  let n = 0;
  for (const ops of Object.values(sim.stats().countries)) for (const s of Object.values(ops ?? {})) n += s.calls;
  return n;
}

/** The first ASINs (B0 + 8 characters, counting up) the simulator answers with `kind`. */
export function findAsins(
  sim: RunningSimulator,
  country: Country,
  kind: 'found' | 'not_found' | 'not_accessible',
  count: number,
  skip = 0,
): string[] {
  const out: string[] = [];
  for (let i = skip; out.length < count; i++) {
    const asin = `B0${i.toString(36).toUpperCase().padStart(8, '0')}`;
    if (sim.catalog.lookup(country, asin, 0, 'x-22').kind === kind) out.push(asin);
  }
  return out;
}
