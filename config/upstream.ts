/**
 * The upstream part of the environment: which adapter serves the catalogue (`UPSTREAM`), the
 * Creators API endpoints and per-country credentials, and the simulator's seed, quota and faults.
 * Parsed by loadConfig (env.ts), which reports problems through the same ConfigError lines.
 */
import { z } from 'zod';
import { int, jsonText, secretText, secureUrl, url } from './parsers.js';
import { problemLine } from './secrets.js';
import type { Country } from './countries.js';
import { MARKETPLACES, partnerTagSuffix } from './marketplaces.js';
import { CREATORS_API_URL, CREDENTIAL_VERSIONS, credentialVersion, type CredentialVersion } from './creators-api.js';
import { faultsSchema, type Faults } from './faults.js';

const fraction = z
  .string()
  .regex(/^(0(\.\d+)?|1(\.0+)?|\.\d+)$/, 'must be a number from 0 to 1')
  .transform(Number);

const httpUrl = url(/^https?:$/, 'an http(s)').transform((v) => v.replace(/\/+$/, ''));
/** The Creators API's catalog and token endpoints: the credentials and bearer tokens travel there. */
const creatorsUrl = secureUrl.transform((v) => v.replace(/\/+$/, ''));

const faultsJson = jsonText('must be a JSON object such as {"errorRate":0.1}').pipe(faultsSchema);

export const upstreamEnvSchema = z.object({
  UPSTREAM: z.enum(['simulator', 'creators'], { error: 'must be simulator or creators' }).default('simulator'),
  CREATORS_API_URL: creatorsUrl.default(CREATORS_API_URL),
  CREATORS_TIMEOUT_MS: int(100, 300_000).default(10_000),
  SIMULATOR_URL: httpUrl.optional(),
  SIMULATOR_HOST: z.string().min(1).default('127.0.0.1'),
  SIMULATOR_PORT: int(0, 65535).default(0),
  SIMULATOR_SEED: z.string().min(1).max(200).default('shelfwatch'),
  SIMULATOR_QUOTA_RPS: int(1, 100_000).default(1),
  SIMULATOR_QUOTA_PER_DAY: int(1, 1_000_000_000).default(8_640),
  /** Calls the bucket holds: a second's worth (SIMULATOR_QUOTA_RPS) unless set, so one call at Q = 1. */
  SIMULATOR_QUOTA_BURST: int(1, 100_000).optional(),
  /** Each call reaches the bucket up to this many ms late (uniform): the network's jitter. */
  SIMULATOR_JITTER_MS: int(0, 10_000).default(0),
  SIMULATOR_TOKEN_TTL_S: int(1, 86_400).default(3_600),
  SIMULATOR_NOT_FOUND_RATE: fraction.default(0.05),
  SIMULATOR_NOT_ACCESSIBLE_RATE: fraction.default(0.01),
  SIMULATOR_DRIFT_MS: int(1_000, 30 * 86_400_000).default(3_600_000),
  /** Share of products that never change (src/simulator/catalog.ts). */
  SIMULATOR_STILL_SHARE: fraction.default(0),
  /** How far a product's change activity swings over the day and over 1 to 4 weeks (together below 1). */
  SIMULATOR_DAILY_SWING: z.coerce.number().min(0).max(0.99).default(0),
  SIMULATOR_WEEKLY_SWING: z.coerce.number().min(0).max(0.99).default(0),
  SIMULATOR_CLIENT_ID: z.string().min(1).default('shelfwatch-simulator'),
  SIMULATOR_CLIENT_SECRET: secretText.default('shelfwatch-simulator-secret'),
  SIMULATOR_FAULTS: faultsJson.optional(),
});

export interface CountryUpstreamConfig {
  readonly marketplace: string;
  readonly partnerTag: string;
  /** id/secret are undefined only with UPSTREAM=simulator, which uses the simulator's own client. */
  readonly credentialId: string | undefined;
  readonly credentialSecret: string | undefined;
  readonly credentialVersion: CredentialVersion;
  /** undefined: the version's endpoint (or, for the simulator, its token path). */
  readonly tokenUrl: string | undefined;
}

export interface SimulatorConfig {
  /** A simulator running elsewhere; when unset, `all` starts one in-process. */
  readonly url: string | undefined;
  readonly host: string;
  readonly port: number;
  readonly seed: string;
  readonly quota: { readonly perSecond: number; readonly perDay: number; readonly burst: number; readonly jitterMs: number };
  readonly tokenTtlSeconds: number;
  readonly notFoundRate: number;
  readonly notAccessibleRate: number;
  readonly driftMs: number;
  readonly stillShare: number;
  readonly dailySwing: number;
  readonly weeklySwing: number;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly faults: Faults;
}

export interface UpstreamConfig {
  readonly kind: 'simulator' | 'creators';
  readonly apiUrl: string;
  readonly timeoutMs: number;
  readonly countries: Readonly<Partial<Record<Country, CountryUpstreamConfig>>>;
  readonly simulator: SimulatorConfig;
}

/** The simulator's default partner tag: it checks the suffix as the real service does. */
const simulatorPartnerTag = (cc: Country): string => `shelfwatch${partnerTagSuffix(cc)}`;

/** Parses the upstream variables of `env` (empty values already removed) for `countries`. */
export function parseUpstreamConfig(
  env: Readonly<Record<string, string>>,
  countries: readonly Country[],
): { config?: UpstreamConfig; problems: string[] } {
  const problems: string[] = [];
  const parsed = upstreamEnvSchema.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = String(issue.path[0] ?? 'environment');
      const where = issue.path.length > 1 ? ` (at ${issue.path.slice(1).join('.')})` : '';
      problems.push(problemLine(name, issue.message + where, env[name]));
    }
  }
  const creators = (parsed.data?.UPSTREAM ?? env.UPSTREAM) === 'creators';
  const perCountry: Partial<Record<Country, CountryUpstreamConfig>> = {};
  for (const cc of countries) {
    const market = MARKETPLACES[cc];
    const v = (name: string): string | undefined => env[`${name}_${cc}`];
    const versionText = v('CREATORS_CREDENTIAL_VERSION') ?? market.defaultCredentialVersion;
    const version = credentialVersion(versionText);
    if (!version) {
      problems.push(
        problemLine(`CREATORS_CREDENTIAL_VERSION_${cc}`, `must be one of ${Object.keys(CREDENTIAL_VERSIONS).join(', ')}`, versionText),
      );
    }
    const tokenUrl = v('CREATORS_TOKEN_URL');
    const tokenUrlIssue = tokenUrl === undefined ? undefined : creatorsUrl.safeParse(tokenUrl).error?.issues[0];
    if (tokenUrlIssue) problems.push(problemLine(`CREATORS_TOKEN_URL_${cc}`, tokenUrlIssue.message, tokenUrl));
    const partnerTag = v('CREATORS_PARTNER_TAG') ?? (creators ? undefined : simulatorPartnerTag(cc));
    if (partnerTag !== undefined && !/^[A-Za-z0-9_-]{1,64}$/.test(partnerTag)) {
      problems.push(
        problemLine(
          `CREATORS_PARTNER_TAG_${cc}`,
          'must be the store/tracking id of that marketplace (1-64 letters, digits, - or _)',
          partnerTag,
        ),
      );
    }
    const secret = v('CREATORS_CREDENTIAL_SECRET');
    const secretIssue = secret === undefined ? undefined : secretText.safeParse(secret).error?.issues[0];
    if (secretIssue) problems.push(problemLine(`CREATORS_CREDENTIAL_SECRET_${cc}`, secretIssue.message, secret));
    if (creators) {
      for (const [name, what] of [
        ['CREATORS_CREDENTIAL_ID', 'Credential ID'],
        ['CREATORS_CREDENTIAL_SECRET', 'Credential Secret'],
        ['CREATORS_PARTNER_TAG', 'partner (tracking) tag'],
      ] as const) {
        if (v(name) === undefined) {
          problems.push(
            `${name}_${cc} is required when UPSTREAM=creators: the Creators API ${what} for ${market.host} (or set UPSTREAM=simulator, or leave ${cc} out of COUNTRIES)`,
          );
        }
      }
    }
    if (version && partnerTag !== undefined) {
      perCountry[cc] = Object.freeze({
        marketplace: market.host,
        partnerTag,
        credentialId: v('CREATORS_CREDENTIAL_ID'),
        credentialSecret: v('CREATORS_CREDENTIAL_SECRET'),
        credentialVersion: version,
        tokenUrl: tokenUrl?.replace(/\/+$/, ''),
      });
    }
  }
  if (parsed.success && parsed.data.SIMULATOR_NOT_FOUND_RATE + parsed.data.SIMULATOR_NOT_ACCESSIBLE_RATE > 1) {
    problems.push('SIMULATOR_NOT_FOUND_RATE and SIMULATOR_NOT_ACCESSIBLE_RATE must not add up to more than 1');
  }
  if (problems.length || !parsed.success) return { problems };
  const e = parsed.data;
  return {
    problems,
    config: Object.freeze({
      kind: e.UPSTREAM,
      apiUrl: e.CREATORS_API_URL,
      timeoutMs: e.CREATORS_TIMEOUT_MS,
      countries: Object.freeze(perCountry),
      simulator: Object.freeze({
        url: e.SIMULATOR_URL,
        host: e.SIMULATOR_HOST,
        port: e.SIMULATOR_PORT,
        seed: e.SIMULATOR_SEED,
        quota: Object.freeze({
          perSecond: e.SIMULATOR_QUOTA_RPS,
          perDay: e.SIMULATOR_QUOTA_PER_DAY,
          burst: e.SIMULATOR_QUOTA_BURST ?? e.SIMULATOR_QUOTA_RPS,
          jitterMs: e.SIMULATOR_JITTER_MS,
        }),
        tokenTtlSeconds: e.SIMULATOR_TOKEN_TTL_S,
        notFoundRate: e.SIMULATOR_NOT_FOUND_RATE,
        notAccessibleRate: e.SIMULATOR_NOT_ACCESSIBLE_RATE,
        driftMs: e.SIMULATOR_DRIFT_MS,
        stillShare: e.SIMULATOR_STILL_SHARE,
        dailySwing: e.SIMULATOR_DAILY_SWING,
        weeklySwing: e.SIMULATOR_WEEKLY_SWING,
        clientId: e.SIMULATOR_CLIENT_ID,
        clientSecret: e.SIMULATOR_CLIENT_SECRET,
        faults: Object.freeze(e.SIMULATOR_FAULTS ?? faultsSchema.parse({})),
      }),
    }),
  };
}
