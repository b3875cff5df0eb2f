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
  .transform(Number)
  .meta({ type: 'number 0–1' });

const httpUrl = url(/^https?:$/, 'an http(s)').transform((v) => v.replace(/\/+$/, ''));
/** The Creators API's catalog and token endpoints: the credentials and bearer tokens travel there. */
const creatorsUrl = secureUrl.transform((v) => v.replace(/\/+$/, ''));

const faultsJson = jsonText('must be a JSON object such as {"errorRate":0.1}').pipe(faultsSchema).meta({ type: 'JSON object' });

export const upstreamEnvSchema = z.object({
  UPSTREAM: z
    .enum(['simulator', 'creators'], { error: 'must be simulator or creators' })
    .default('simulator')
    .meta({ description: "Where the catalogue comes from: `creators` (Amazon's Creators API) or `simulator`." }),
  CREATORS_API_URL: creatorsUrl
    .default(CREATORS_API_URL)
    .meta({ description: 'The base URL of the catalog operations (`/catalog/v1/…`): point it at a proxy or a standalone simulator.' }),
  CREATORS_TIMEOUT_MS: int(100, 300_000)
    .default(10_000)
    .meta({ description: 'The timeout (ms) of each upstream request, token and catalog.' }),
  SIMULATOR_URL: httpUrl
    .optional()
    .meta({ description: 'A simulator running elsewhere, for `UPSTREAM=simulator`.', unset: '`all` starts one in-process' }),
  SIMULATOR_HOST: z.string().min(1).default('127.0.0.1').meta({ description: 'The address the simulator listens on.' }),
  SIMULATOR_PORT: int(0, 65535).default(0).meta({ description: "The simulator's port (`0`: any free port; the URL is logged)." }),
  SIMULATOR_SEED: z
    .string()
    .min(1)
    .max(200)
    .default('shelfwatch')
    .meta({ description: 'The seed of the synthetic catalogue: the same seed gives the same items.' }),
  SIMULATOR_QUOTA_RPS: int(1, 100_000)
    .default(1)
    .meta({ description: "The simulator's quota a second per country, as for new Creators API credentials." }),
  SIMULATOR_QUOTA_PER_DAY: int(1, 1_000_000_000).default(8_640).meta({ description: "The simulator's quota a day per country." }),
  SIMULATOR_QUOTA_BURST: int(1, 100_000).optional().meta({
    description: "Calls the simulator's bucket holds per country (the real service names no burst).",
    unset: "a second's worth (`SIMULATOR_QUOTA_RPS`): one call at Q = 1",
  }),
  SIMULATOR_JITTER_MS: int(0, 10_000)
    .default(0)
    .meta({ description: "The most each call reaches the simulator's bucket late (ms, uniform): network jitter on its own clock." }),
  SIMULATOR_TOKEN_TTL_S: int(1, 86_400).default(3_600).meta({ description: "The lifetime (s) of the simulator's access tokens." }),
  SIMULATOR_NOT_FOUND_RATE: fraction.default(0.05).meta({ description: 'The share of ASINs that do not exist.' }),
  SIMULATOR_NOT_ACCESSIBLE_RATE: fraction
    .default(0.01)
    .meta({ description: 'The share of ASINs that are not accessible (with the not-found share at most 1).' }),
  SIMULATOR_DRIFT_MS: int(1_000, 30 * 86_400_000)
    .default(3_600_000)
    .meta({
      description:
        "The mean interval (ms), over products, between a product's changes of price, availability and rank (each product has its own).",
    }),
  /** How far a product's change rate follows its rank, category and offers (src/simulator/rate-features.ts). */
  SIMULATOR_FEATURES: z.enum(['none', 'weak', 'strong']).default('none').meta({
    description:
      "How strongly a product's change rate follows what the simulator reports of it (sales rank, category, offers): none, weak or strong.",
  }),
  /** Share of products that never change (src/simulator/catalog.ts). */
  SIMULATOR_STILL_SHARE: fraction.default(0).meta({ description: 'The share of products that never change.' }),
  /** How far a product's change activity swings over the day and over 1 to 4 weeks (together below 1). */
  SIMULATOR_DAILY_SWING: z.coerce
    .number()
    .min(0)
    .max(0.99)
    .meta({ type: 'number 0–0.99' })
    .default(0)
    .meta({ description: "How far a product's change activity swings over the day (each product its own phase)." }),
  SIMULATOR_WEEKLY_SWING: z.coerce
    .number()
    .min(0)
    .max(0.99)
    .meta({ type: 'number 0–0.99' })
    .default(0)
    .meta({ description: 'How far it swings over a period of 1 to 4 weeks (each product its own); the two swings together below 1.' }),
  SIMULATOR_CLIENT_ID: z
    .string()
    .min(1)
    .default('shelfwatch-simulator')
    .meta({ description: "The one client id the simulator's token endpoints accept." }),
  SIMULATOR_CLIENT_SECRET: secretText
    .default('shelfwatch-simulator-secret')
    .meta({ description: "The one client secret the simulator's token endpoints accept." }),
  SIMULATOR_FAULTS: faultsJson
    .optional()
    .meta({ description: 'Faults injected from the start, as JSON with the members of `POST /__faults`.', unset: 'none' }),
});

/**
 * The variables read once per country of COUNTRIES, as `<NAME>_<CC>` (CREATORS_CREDENTIAL_ID_JP):
 * parsed by hand below, since their names depend on the countries, and declared here so that the
 * configuration reference lists them.
 */
export const COUNTRY_UPSTREAM_SETTINGS = {
  CREATORS_CREDENTIAL_ID: {
    type: 'string',
    description: 'The Creators API Credential ID for the country.',
    unset: 'required with `UPSTREAM=creators`',
  },
  CREATORS_CREDENTIAL_SECRET: {
    type: 'string',
    description: 'The Credential Secret for the country (never logged or echoed in errors).',
    unset: 'required with `UPSTREAM=creators`',
  },
  CREATORS_CREDENTIAL_VERSION: {
    type: '2.1, 2.2, 2.3, 3.1, 3.2 or 3.3',
    description:
      'The credential version (`2.x` Cognito, `3.x` Login with Amazon; `x.1` NA, `x.2` EU, `x.3` FE): it picks the token endpoint, scope and request style, and serves only its region.',
    unset: "the 3.x of the country's region: `3.1` NA (US CA MX BR), `3.2` EU, the Middle East and India, `3.3` FE (JP AU SG)",
  },
  CREATORS_PARTNER_TAG: {
    type: 'string',
    description: 'The Associates tracking tag of that marketplace.',
    unset: 'required with `UPSTREAM=creators` (simulator: `shelfwatch-20` in NA, `shelfwatch-21` in EU, `shelfwatch-22` in FE)',
  },
  CREATORS_TOKEN_URL: {
    type: 'https URL',
    description: "An OAuth2 token endpoint instead of the credential version's.",
    unset: "the version's endpoint (simulator: its own)",
  },
} as const satisfies Record<string, { type: string; description: string; unset: string }>;

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
  readonly features: 'none' | 'weak' | 'strong';
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
    const v = (name: keyof typeof COUNTRY_UPSTREAM_SETTINGS): string | undefined => env[`${name}_${cc}`];
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
        features: e.SIMULATOR_FEATURES,
        dailySwing: e.SIMULATOR_DAILY_SWING,
        weeklySwing: e.SIMULATOR_WEEKLY_SWING,
        clientId: e.SIMULATOR_CLIENT_ID,
        clientSecret: e.SIMULATOR_CLIENT_SECRET,
        faults: Object.freeze(e.SIMULATOR_FAULTS ?? faultsSchema.parse({})),
      }),
    }),
  };
}
