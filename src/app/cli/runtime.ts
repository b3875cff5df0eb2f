import { loadConfig, type Config } from '../../../config/env.js';
import { buildContext, type AppContext, type ContextOptions } from '../context.js';
import { createLogger, warnDeprecatedSettings, type Logger } from '../../logger.js';

/**
 * Admin commands are quiet unless LOG_LEVEL says otherwise: their answer is one line on stdout and
 * the log (stderr) should carry only what went wrong.
 */
export function adminConfig(env: NodeJS.ProcessEnv): Config {
  return loadConfig({ LOG_LEVEL: 'warn', ...env });
}

/** Runs `fn` on a context that is closed afterwards, whatever happens. */
export async function withAdminContext<T>(
  env: NodeJS.ProcessEnv,
  fn: (ctx: AppContext) => Promise<T>,
  opts: Partial<ContextOptions> = {},
): Promise<T> {
  const config = adminConfig(env);
  const logger: Logger = createLogger(config);
  warnDeprecatedSettings(logger, config);
  const ctx = await buildContext(config, logger, { embedded: 'attach', ensureIndexes: true, ...opts });
  try {
    return await fn(ctx);
  } finally {
    await ctx.resources.close();
    logger.flush();
  }
}
