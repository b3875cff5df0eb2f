import { ConfigError, loadConfig } from '../../config/env.js';

/** The problem lines loadConfig reports for `env` (none when it is valid). */
export function configProblems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  return [];
}
