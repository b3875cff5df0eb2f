import { ConfigError, type Config } from '../../config/env.js';

/**
 * Refuses the embedded parts where the configuration does not allow them (NODE_ENV=production
 * without EMBEDDED=true): a deployment that lost MONGODB_URI or REDIS_URL would otherwise start a
 * memory-only database beside it, or attach to whatever a state file names, and lose what it writes.
 * A ConfigError, so the exit code (78) tells supervisors not to restart it.
 */
export function assertEmbeddedAllowed(config: Config): void {
  if (config.embeddedAllowed) return;
  const unset = [config.mongo.uri ? undefined : 'MONGODB_URI', config.redis.url ? undefined : 'REDIS_URL'].filter(Boolean);
  if (unset.length === 0) return;
  const why = config.env === 'production' ? 'with NODE_ENV=production' : 'with EMBEDDED=false';
  throw new ConfigError([
    `${unset.join(' and ')} ${unset.length > 1 ? 'are' : 'is'} required ${why}: set MONGODB_URI and REDIS_URL (and APP_KEY), ` +
      'or EMBEDDED=true to run on embedded, memory-only MongoDB and Redis',
  ]);
}
