import { loadConfig } from '../../../../config/env.js';
import { buildContext } from '../../context.js';
import { createLogger, warnDeprecatedSettings } from '../../../logger.js';
import { installSignalHandlers } from '../../../lifecycle/signals.js';
import { startRole, type Role } from '../../roles/serve.js';
import { VERSION } from '../../../version.js';
import type { Command } from './types.js';

function roleCommand(role: Role): Command {
  return {
    name: role,
    longRunning: true,
    options: {},
    async run(_flags, env) {
      const config = loadConfig(env);
      const logger = createLogger(config);
      warnDeprecatedSettings(logger, config);
      logger.info({ role, version: VERSION, node: process.version, pid: process.pid }, 'starting');
      // Workers and schedulers join an existing deployment (or the embedded parts of a running
      // `shelfwatch all`); starting private databases for them would do no useful work.
      const embedded = role === 'worker' || role === 'scheduler' ? 'attach' : 'start';
      const ctx = await buildContext(config, logger, { embedded, ensureIndexes: true, embeddedBoard: role === 'all' });
      // Signals are handled from here on: a signal during start-up still closes what was opened.
      installSignalHandlers({ logger, timeoutMs: config.shutdownTimeoutMs, drain: () => ctx.resources.close() });
      try {
        await startRole(role, ctx);
      } catch (err) {
        await ctx.resources.close();
        throw err;
      }
      logger.info({ role }, 'ready');
      return 0;
    },
  };
}

export const allCommand = roleCommand('all');
export const apiCommand = roleCommand('api');
export const workerCommand = roleCommand('worker');
export const schedulerCommand = roleCommand('scheduler');
