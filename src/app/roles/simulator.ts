import type { Config } from '../../../config/env.js';
import type { AppContext } from '../context.js';
import type { Logger } from '../../logger.js';
import type { Resources } from '../../lifecycle/resources.js';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../simulator/server.js';

/** Starts a simulator owned by `resources` and logs where it listens. */
export async function runSimulator(
  config: Config,
  logger: Logger,
  resources: Resources,
  opts?: SimulatorOptions,
): Promise<RunningSimulator> {
  const sim = config.upstream.simulator;
  const running = resources.own('upstream simulator', await startSimulator(sim, logger.child({ component: 'simulator' }), opts), (s) =>
    s.close(),
  );
  logger.info({ url: running.url, seed: sim.seed, quota: sim.quota, faults: sim.faults }, 'upstream simulator listening');
  return running;
}

/**
 * The upstream of the embedded mode: with UPSTREAM=simulator and no SIMULATOR_URL, `all` runs a
 * simulator in its own process, so the product works with no credentials. Its URL is what
 * createUpstream needs as `simulatorUrl`.
 */
export async function startEmbeddedSimulator(ctx: AppContext): Promise<RunningSimulator | undefined> {
  const up = ctx.config.upstream;
  if (up.kind !== 'simulator' || up.simulator.url !== undefined) return undefined;
  return runSimulator(ctx.config, ctx.logger, ctx.resources);
}
