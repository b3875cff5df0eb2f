import { loadConfig } from '../../../../config/env.js';
import { Resources } from '../../../lifecycle/resources.js';
import { installSignalHandlers } from '../../../lifecycle/signals.js';
import { createLogger, warnDeprecatedSettings } from '../../../logger.js';
import { VERSION } from '../../../version.js';
import type { Command } from './types.js';

/**
 * `shelfwatch simulator`: the simulated Creators API on its own, for other processes (workers on
 * other machines, a second shelfwatch, curl). It needs no MongoDB or Redis.
 */
export const simulatorCommand: Command = {
  name: 'simulator',
  longRunning: true,
  options: {},
  async run(_flags, env) {
    const config = loadConfig(env);
    const logger = createLogger(config);
    warnDeprecatedSettings(logger, config);
    logger.info({ role: 'simulator', version: VERSION, node: process.version, pid: process.pid }, 'starting');
    const resources = new Resources(logger);
    installSignalHandlers({ logger, timeoutMs: config.shutdownTimeoutMs, drain: () => resources.close() });
    try {
      const { runSimulator } = await import('../../roles/simulator.js');
      await runSimulator(config, logger, resources);
    } catch (err) {
      await resources.close();
      throw err;
    }
    logger.info({ role: 'simulator' }, 'ready');
    return 0;
  },
};
