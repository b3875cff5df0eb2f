/**
 * Settings read under a former name for one release. The alert settings that apply to every
 * channel were named after the signed webhook alone; a deployment's environment keeps working while
 * its operator moves to the new names, and start-up says which to change.
 */

/** Former name → current name. */
export const RENAMED_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  WEBHOOK_CONCURRENCY: 'DELIVERY_CONCURRENCY',
  WEBHOOK_TIMEOUT: 'DELIVERY_TIMEOUT',
  WEBHOOK_RETRY_SCHEDULE: 'DELIVERY_RETRY_SCHEDULE',
  WEBHOOK_RECORDS_PER_ENDPOINT: 'DELIVERY_RECORDS_PER_ENDPOINT',
  WEBHOOK_DISABLE_AFTER: 'ENDPOINT_DISABLE_AFTER',
  WEBHOOK_ALLOW_PRIVATE: 'ENDPOINT_ALLOW_PRIVATE',
  WEBHOOK_ALLOWED_PORTS: 'ENDPOINT_ALLOWED_PORTS',
});

/** A former name found in the environment: the caller logs it, since configuration does not log. */
export interface DeprecatedSetting {
  readonly name: string;
  readonly replacement: string;
  /** Whether the current name was set too, and so was the one read. */
  readonly ignored: boolean;
  readonly message: string;
}

/**
 * `env` with each former name's value under its current name (unless that is set: the current
 * name wins), the deprecation of every former name present, and which current names were filled
 * from a former one (so a bad value is reported under the name the operator wrote).
 */
export function applyRenamedSettings(env: Readonly<Record<string, string>>): {
  env: Record<string, string>;
  deprecations: DeprecatedSetting[];
  readFrom: Record<string, string>;
} {
  const out: Record<string, string> = { ...env };
  const deprecations: DeprecatedSetting[] = [];
  const readFrom: Record<string, string> = {};
  for (const [name, replacement] of Object.entries(RENAMED_SETTINGS)) {
    if (env[name] === undefined) continue;
    delete out[name];
    const ignored = env[replacement] !== undefined;
    if (!ignored) {
      out[replacement] = env[name];
      readFrom[replacement] = name;
    }
    deprecations.push({
      name,
      replacement,
      ignored,
      message: ignored
        ? `${name} is a former name of ${replacement}, which is set too and is the one read: remove ${name}`
        : `${name} is a former name, read for one more release: rename it ${replacement}`,
    });
  }
  return { env: out, deprecations, readFrom };
}
