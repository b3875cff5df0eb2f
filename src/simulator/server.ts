/**
 * Starts a simulator on a port and hands back its URL and controls. Used by `shelfwatch simulator`,
 * by `all` when UPSTREAM=simulator, and by tests (with an injected clock).
 */
import type { SimulatorConfig } from '../../config/upstream.js';
import { listen } from '../lifecycle/http-server.js';
import type { Logger } from '../logger.js';
import { buildSimulatorApp } from './app.js';
import { SyntheticCatalog } from './catalog.js';
import { FaultInjector } from './faults.js';
import { QuotaKeeper } from './quota.js';
import type { SimulatorState } from './state.js';
import { SimulatorStats, type StatsSnapshot } from './stats.js';
import { TokenIssuer } from './tokens.js';

export interface RunningSimulator {
  readonly url: string;
  readonly catalog: SyntheticCatalog;
  readonly faults: FaultInjector;
  stats(): StatsSnapshot;
  close(): Promise<void>;
}

export interface SimulatorOptions {
  /** The simulator's clock (token expiry, quota, price drift); tests move it by hand. */
  readonly now?: () => number;
  /** Fault draws; tests pin them. */
  readonly random?: () => number;
}

export async function startSimulator(config: SimulatorConfig, logger: Logger, opts: SimulatorOptions = {}): Promise<RunningSimulator> {
  const state: SimulatorState = {
    config,
    logger,
    now: opts.now ?? Date.now,
    arrivalNow: opts.now ?? (() => performance.timeOrigin + performance.now()),
    catalog: new SyntheticCatalog({
      seed: config.seed,
      notFoundRate: config.notFoundRate,
      notAccessibleRate: config.notAccessibleRate,
      driftMs: config.driftMs,
      stillShare: config.stillShare,
      features: config.features,
      dailySwing: config.dailySwing,
      weeklySwing: config.weeklySwing,
    }),
    tokens: new TokenIssuer(),
    quota: new QuotaKeeper(config.quota),
    faults: new FaultInjector(config.faults, opts.random),
    stats: new SimulatorStats(),
    held: new Set(),
  };
  const server = await listen(buildSimulatorApp(state), config.port, config.host);
  return {
    url: server.url,
    catalog: state.catalog,
    faults: state.faults,
    stats: () => state.stats.snapshot(),
    async close() {
      // Held (timed-out) requests would keep close() waiting for ever: drop their sockets first.
      for (const res of state.held) res.socket?.destroy();
      await server.close();
    },
  };
}
