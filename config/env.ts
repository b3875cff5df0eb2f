/**
 * The environment, validated once at start-up and frozen.
 *
 * Every variable the program reads is declared here with its default; nothing else in the code reads
 * `process.env`. A bad value stops the program with one line per variable (see ConfigError).
 */
import { z } from 'zod';
import { parseAppKey } from './app-key.js';
import { problemLine, withoutSecretValues } from './secrets.js';
import { bool, duration, durationOrZero, int, mongoUri, timeZone, url } from './parsers.js';
import { parseUpstreamConfig, type UpstreamConfig } from './upstream.js';
import { buildWorkersConfig, workersEnvSchema, type WorkersConfig } from './workers.js';
import { buildQuotaConfig, quotaEnvSchema, type QuotaConfig } from './quota.js';
import { buildRateLimitsConfig, rateLimitsEnvSchema, type RateLimitsConfig } from './rate-limits.js';
import { buildOpsConfig, opsEnvSchema, type BoardConfig, type MetricsConfig } from './ops.js';
import { accountsEnvSchema, buildAccountsConfig, type AccountsConfig } from './accounts.js';
import { alertsEnvSchema, buildAlertsConfig, type AlertsConfig } from './alerts.js';
import { buildSmtpConfig, smtpEnvSchema } from './smtp.js';
import { buildChartsConfig, chartsEnvSchema, type ChartsConfig } from './charts.js';
import { countryList, DEFAULT_COUNTRIES, type Country } from './countries.js';
import { trustProxyListProblem } from './trust-proxy.js';
import { applyRenamedSettings, type DeprecatedSetting } from './renamed.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Express's "trust proxy": `false`/`0` (the socket address is the client), a number of hops, or a
 * comma list of addresses/subnets/names such as `loopback`. `true` is refused: it trusts the
 * leftmost X-Forwarded-For, which any client can forge; so is a list that holds every address.
 */
const trustProxy = z
  .string()
  .refine((v) => v !== 'true', 'must be a number of proxies or a list of their addresses, not "true" (a client could forge its address)')
  .superRefine((v, ctx) => {
    const problem = trustProxyListProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((v): number | string | false => {
    if (v === 'false') return false;
    if (/^\d+$/.test(v)) return Number(v) === 0 ? false : Number(v);
    return v;
  })
  .meta({ type: 'hops or address list' });

export const envSchema = z
  .object({
    NODE_ENV: z
      .enum(['production', 'development', 'test'])
      .default('production')
      .meta({ description: 'Which environment this is: `production`, `development` or `test`.' }),
    PORT: int(0, 65535).default(3000).meta({ description: 'The HTTP port (`0`: any free port).' }),
    HOST: z.string().min(1).default('127.0.0.1').meta({ description: 'The address to listen on (the Docker image sets `0.0.0.0`).' }),
    APP_URL: url(/^https?:$/, 'an http(s)')
      .optional()
      .meta({
        description: 'The absolute base URL of the links the API generates (paging, e-mail links).',
        unset: "the request's own host",
      }),
    APP_KEY: z.string().optional().meta({
      description:
        '`base64:` and 32 random bytes (`shelfwatch key:generate`) that seal stored secrets; required when `MONGODB_URI` is set.',
      unset: 'random per run (embedded mode only)',
    }),
    APP_TIMEZONE: timeZone.default('UTC').meta({ description: 'The IANA time zone of the `YYYY-MM-DD HH:MM:SS` dates in answers.' }),
    MONGODB_URI: mongoUri.optional().meta({
      description:
        "The `mongodb://` (one host, or a replica set's hosts separated by commas) or `mongodb+srv://` connection string, database in the path.",
      unset: 'embedded (mongodb-memory-server)',
    }),
    REDIS_URL: url(/^rediss?:$/, 'a redis://')
      .optional()
      .meta({
        description:
          'The `redis://` or `rediss://` URL of Redis; beside `REDIS_CLUSTER_NODES` it only lends its user, password and TLS to every node.',
        unset: 'embedded (a `redis-server` child)',
      }),
    // A Redis Cluster's seed nodes; REDIS_URL then only lends its credentials and TLS to every node.
    REDIS_CLUSTER_NODES: z
      .string()
      .transform((v, zctx) => {
        const nodes = v
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean);
        const parsed = nodes.map((n) => /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(n));
        if (!nodes.length || parsed.some((m) => !m || Number(m[2]) > 65535)) {
          zctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of host:port (127.0.0.1:7000,127.0.0.1:7001)' });
          return z.NEVER;
        }
        return parsed.map((m) => Object.freeze({ host: m![1]!.replace(/^\[(.*)\]$/, '$1'), port: Number(m![2]) }));
      })
      .meta({ type: 'host:port list' })
      .optional()
      .meta({
        description:
          "A Redis Cluster's seed nodes, `host:port,host:port,…` (a few of its nodes: the client finds the rest); a cluster is never embedded.",
        unset: 'one Redis',
      }),
    // The keys' hash tags are built from it per country and per group (src/db/redis-keys.ts); a
    // prefix written in braces, as a Redis Cluster tag, is taken without them.
    REDIS_PREFIX: z
      .string()
      .regex(/^(\{[A-Za-z0-9_-]{1,40}\}|[A-Za-z0-9_-]{1,40})$/, 'must be 1-40 letters, digits, _ or -')
      .transform((v) => v.replace(/^\{(.*)\}$/, '$1'))
      .default('shelfwatch')
      .meta({
        description:
          "The start of every Redis key's hash tag (`{PREFIX:CC}` per country, one tag per group for the rest; see [operations.md](operations.md)); written in braces it is taken without them.",
      }),
    LOG_LEVEL: z
      .enum(LOG_LEVELS)
      .default('info')
      .meta({ description: 'The least level logged.', unset: '`info` (`warn` for admin commands)' }),
    LOG_PRETTY: bool.default(false).meta({ description: 'Human-readable logs instead of JSON lines (development).' }),
    TRUST_PROXY: trustProxy.default(false).meta({
      description:
        'The number of reverse proxies in front of the api, or a comma list of their addresses or subnets (`loopback`, `10.0.0.0/8`); `true` is refused because clients could forge their address.',
    }),
    BODY_LIMIT: z
      .string()
      .regex(/^\d+(b|kb|mb)$/i, 'must be a size such as 100kb or 1mb')
      .meta({ type: 'size' })
      .default('100kb')
      .meta({ description: 'The largest request body (`100kb`, `1mb`); a larger one answers 413.' }),
    SHUTDOWN_TIMEOUT_MS: int(100, 600_000)
      .default(10_000)
      .meta({ description: 'How long (ms) a SIGTERM may drain before the process exits anyway.' }),
    STATE_DIR: z
      .string()
      .min(1)
      .default('.shelfwatch')
      .meta({ description: 'Where the embedded mode leaves its URIs for admin commands run beside it.' }),
    /** Whether MongoDB/Redis may be embedded when their URLs are unset; off by default only with NODE_ENV=production set. */
    EMBEDDED: bool.optional().meta({
      description:
        'Whether an unset `MONGODB_URI` / `REDIS_URL` may mean embedded, memory-only MongoDB / Redis; when not, the command stops with exit code 78.',
      unset: '`true`; `false` when `NODE_ENV=production` is set (as the image and the systemd units do)',
    }),
    COUNTRIES: countryList.default([...DEFAULT_COUNTRIES]).meta({
      description: 'The countries whose catalogue is kept (a comma list of the codes below); a watched ASIN is tracked in each.',
      defaultText: 'JP,US',
    }),
    REFRESH_INTERVAL_P1: duration
      .default(3_600_000)
      .meta({ description: 'The refresh interval of priority-1 products; under adaptive scheduling the longest.', defaultText: '1h' }),
    REFRESH_INTERVAL_P0: duration
      .default(86_400_000)
      .meta({ description: 'The refresh interval of priority-0 products; under adaptive scheduling the longest.', defaultText: '1d' }),
    /** `adaptive`: each product's next refresh follows its estimated change rate; `fixed`: its priority's interval. */
    SCHEDULING: z.enum(['adaptive', 'fixed'], { error: 'must be adaptive or fixed' }).default('adaptive').meta({
      description:
        "`adaptive`: each product's next refresh follows its estimated change rate (see [scheduling.md](scheduling.md)); `fixed`: every product at its priority's interval.",
    }),
    /** Adaptive scheduling: the shortest interval between two refreshes of a product. */
    REFRESH_MIN_INTERVAL: duration.default(300_000).meta({
      description: "Adaptive scheduling: the shortest interval between two refreshes of a product (never above a priority's interval).",
      defaultText: '5m',
    }),
    /** What adaptive scheduling spends the calls on (src/scheduling/refresh-objective.ts). */
    REFRESH_OBJECTIVE: z
      .enum(['freshness', 'changes', 'balanced'], { error: 'must be freshness, changes or balanced' })
      .default('balanced')
      .meta({
        description:
          'Adaptive scheduling: what the calls are spent on, `changes` seen, `freshness` of the catalogue, or `balanced` between them by `REFRESH_BALANCE` (see [scheduling.md](scheduling.md)).',
      }),
    /** `balanced`: freshness's weight in [0, 1], or `auto` (src/scheduling/tune-policy.ts). */
    REFRESH_BALANCE: z
      .union([z.literal('auto'), z.coerce.number().min(0, 'must be auto or between 0 and 1').max(1, 'must be auto or between 0 and 1')])
      .default('auto')
      .meta({
        description:
          "Under `balanced`, freshness's weight from 0 (as `changes`) to 1 (as `freshness`), or `auto`: the least weight that keeps 0.8 of the freshness gain `freshness` predicts.",
      }),
    /** How long an api process keeps a directory page at most (a change to users or posts drops it at once); 0 keeps none. */
    DIRECTORY_CACHE_TTL: durationOrZero.default(300_000).meta({
      description:
        'How long an api process keeps a page of `/api/user` or `/api/post` at most; a write drops the pages it changes at once in every process (see [api.md](api.md)), `0` keeps none.',
      defaultText: '5m',
    }),
    /** How long an api process keeps the account of a token at most (a change to users drops it at once); 0 keeps none. */
    ACCOUNT_CACHE_TTL: durationOrZero.default(60_000).meta({
      description:
        'How long an api process keeps the account of a token at most; a write to the account drops it at once in every process, `0` reads it on every request.',
      defaultText: '60s',
    }),
    /** How long a /api/world list's total is reused; 0 counts on every request. */
    WORLD_TOTAL_TTL: durationOrZero.default(10_000).meta({
      description:
        'How long an api process reuses the `total` of a `/api/world` or `/api/world/new` list (per filter); `0` counts on every request.',
      defaultText: '10s',
    }),
    /** How long an api process sends a /api/world or /api/world/new page it made again; 0 makes each afresh. */
    WORLD_PAGE_TTL: durationOrZero.default(1_000).meta({
      description:
        'How long an api process sends a `/api/world` or `/api/world/new` page it made again to whoever asks for the same page; `0` makes every page afresh.',
      defaultText: '1s',
    }),
  })
  .extend(workersEnvSchema.shape)
  .extend(quotaEnvSchema.shape)
  .extend(rateLimitsEnvSchema.shape)
  .extend(opsEnvSchema.shape)
  .extend(accountsEnvSchema.shape)
  .extend(alertsEnvSchema.shape)
  .extend(smtpEnvSchema.shape)
  .extend(chartsEnvSchema.shape);

export type Env = z.infer<typeof envSchema>;

export interface Config {
  readonly env: Env['NODE_ENV'];
  readonly http: {
    readonly port: number;
    readonly host: string;
    /** Absolute base for links we generate; when unset, links follow the request's own host. */
    readonly appUrl: string | undefined;
    readonly trustProxy: number | string | false;
    readonly bodyLimit: string;
  };
  /** Decoded 32-byte key, or undefined when unset (allowed only with embedded MongoDB). */
  readonly appKey: Buffer | undefined;
  readonly timeZone: string;
  readonly mongo: { readonly uri: string | undefined };
  readonly redis: {
    readonly url: string | undefined;
    readonly prefix: string;
    readonly cluster: readonly { readonly host: string; readonly port: number }[] | undefined;
  };
  readonly log: { readonly level: Env['LOG_LEVEL']; readonly pretty: boolean };
  readonly shutdownTimeoutMs: number;
  /** Where the embedded mode leaves its URIs for admin commands run beside it. */
  readonly stateDir: string;
  /**
   * Whether unset MONGODB_URI / REDIS_URL may mean embedded, memory-only parts (started, or attached
   * to). Off when NODE_ENV=production is set (the image, the systemd units) unless EMBEDDED=true:
   * a deployment that lost its database URL must stop, not serve from memory.
   */
  readonly embeddedAllowed: boolean;
  /** The countries whose catalogue we keep; a watched ASIN is tracked in each. */
  readonly countries: readonly Country[];
  /** How often a product is refreshed, by its effective priority (ms). */
  readonly refresh: {
    /** The longest interval between two refreshes, by effective priority (ms): the whole interval under `fixed`. */
    readonly intervalMs: Readonly<Record<0 | 1, number>>;
    readonly scheduling: 'adaptive' | 'fixed';
    /** Under `adaptive`, the shortest interval (ms). */
    readonly minIntervalMs: number;
    /** Under `adaptive`, what the calls are spent on, and freshness's weight in `balanced`. */
    readonly objective: 'freshness' | 'changes' | 'balanced';
    /** null: `auto`. */
    readonly balance: number | null;
  };
  /** Which adapter serves the catalogue, its endpoints and credentials (config/upstream.ts). */
  readonly upstream: UpstreamConfig;
  /** Quotas, workers, scheduler, forced update, account API limits, Bull Board (config/workers.ts). */
  readonly workers: WorkersConfig;
  /** Each country's upstream quota and its classes' shares (config/quota.ts). */
  readonly quota: QuotaConfig;
  /** Requests a minute the HTTP side accepts per client (config/rate-limits.ts). */
  readonly rateLimits: RateLimitsConfig;
  /** Bull Board's login; undefined when it is off (config/ops.ts). */
  readonly board: BoardConfig | undefined;
  /** The metrics port of worker and scheduler roles, and the token /metrics asks for (config/ops.ts). */
  readonly metrics: MetricsConfig;
  /** The public directory. */
  readonly directory: { readonly cacheTtlMs: number };
  /** The account API: how long an api process keeps the account of a token (ms; 0: read on every request). */
  readonly accountCacheTtlMs: number;
  /** The account API: how long a world list's total is reused (ms; 0: counted on every request). */
  readonly world: { readonly totalTtlMs: number; readonly pageTtlMs: number };
  /** The account API: per-account caps on watches, pending EAN imports and forced updates (config/accounts.ts). */
  readonly accounts: AccountsConfig;
  /** Price history, alert webhooks and the SMTP server of e-mail alerts (config/alerts.ts, config/smtp.ts). */
  readonly alerts: AlertsConfig;
  /** Price charts: render threads, their queue, renders per account a minute (config/charts.ts). */
  readonly charts: ChartsConfig;
  /** Settings found under a former name (config/renamed.ts), for the program to warn about once. */
  readonly deprecations: readonly DeprecatedSetting[];
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
  }
}

/** Empty values count as unset, as in most .env tooling and systemd EnvironmentFiles. */
function present(raw: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) if (v !== undefined && v !== '') out[k] = v;
  return out;
}

export function loadConfig(raw: NodeJS.ProcessEnv = process.env): Config {
  const renamed = applyRenamedSettings(present(raw));
  const parsed = envSchema.safeParse(renamed.env);
  // Another variable's problem must not turn into credential problems for every country we know.
  const countries = parsed.success ? parsed.data.COUNTRIES : (countryList.safeParse(present(raw).COUNTRIES).data ?? DEFAULT_COUNTRIES);
  const upstream = parseUpstreamConfig(present(raw), countries);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const parsedName = String(issue.path[0] ?? 'environment');
      // A value given under a former name is reported under that name, as the operator wrote it.
      const name = renamed.readFrom[parsedName] ?? parsedName;
      const got = raw[name];
      problems.push(problemLine(name, issue.message, got));
    }
    throw new ConfigError(withoutSecretValues([...problems, ...upstream.problems], raw));
  }
  const env = parsed.data;
  problems.push(...upstream.problems);
  const quota = buildQuotaConfig(env);
  const ops = buildOpsConfig(env);
  const smtp = buildSmtpConfig(env);
  problems.push(...quota.problems, ...ops.problems, ...smtp.problems);
  const workers = buildWorkersConfig(env, quota.config ?? { quotas: {} as QuotaConfig['quotas'] }, env.NODE_ENV, env.COUNTRIES);
  problems.push(...workers.problems);
  let appKey: Buffer | undefined;
  if (env.APP_KEY !== undefined) {
    appKey = parseAppKey(env.APP_KEY);
    if (!appKey) problems.push('APP_KEY must be "base64:" followed by 32 random bytes in base64 (make one with `shelfwatch key:generate`)');
  } else if (env.MONGODB_URI !== undefined) {
    problems.push(
      'APP_KEY is required when MONGODB_URI is set: it encrypts the stored API tokens (make one with `shelfwatch key:generate`)',
    );
  }
  if (problems.length) throw new ConfigError(withoutSecretValues(problems, raw));

  return Object.freeze({
    env: env.NODE_ENV,
    http: Object.freeze({
      port: env.PORT,
      host: env.HOST,
      appUrl: env.APP_URL?.replace(/\/+$/, ''),
      trustProxy: env.TRUST_PROXY,
      bodyLimit: env.BODY_LIMIT,
    }),
    appKey,
    timeZone: env.APP_TIMEZONE,
    mongo: Object.freeze({ uri: env.MONGODB_URI }),
    redis: Object.freeze({ url: env.REDIS_URL, prefix: env.REDIS_PREFIX, cluster: env.REDIS_CLUSTER_NODES }),
    log: Object.freeze({ level: env.LOG_LEVEL, pretty: env.LOG_PRETTY }),
    shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
    stateDir: env.STATE_DIR,
    // Set, not defaulted: NODE_ENV defaults to production, and `npm start` with nothing set is the embedded mode.
    embeddedAllowed: env.EMBEDDED ?? present(raw).NODE_ENV !== 'production',
    countries: Object.freeze([...env.COUNTRIES]),
    refresh: Object.freeze({
      intervalMs: Object.freeze({ 1: env.REFRESH_INTERVAL_P1, 0: env.REFRESH_INTERVAL_P0 }),
      scheduling: env.SCHEDULING,
      // Never above the shorter priority interval: the bounds must leave an interval to choose.
      minIntervalMs: Math.min(env.REFRESH_MIN_INTERVAL, env.REFRESH_INTERVAL_P1, env.REFRESH_INTERVAL_P0),
      objective: env.REFRESH_OBJECTIVE,
      balance: env.REFRESH_BALANCE === 'auto' ? null : env.REFRESH_BALANCE,
    }),
    // Set whenever problems is empty: parseUpstreamConfig returns a config exactly when it found none.
    upstream: upstream.config!,
    workers: workers.config!,
    quota: quota.config!,
    rateLimits: buildRateLimitsConfig(env),
    board: ops.config!.board,
    metrics: ops.config!.metrics,
    directory: Object.freeze({ cacheTtlMs: env.DIRECTORY_CACHE_TTL }),
    accountCacheTtlMs: env.ACCOUNT_CACHE_TTL,
    world: Object.freeze({ totalTtlMs: env.WORLD_TOTAL_TTL, pageTtlMs: env.WORLD_PAGE_TTL }),
    accounts: buildAccountsConfig(env),
    alerts: buildAlertsConfig(env, smtp.config),
    charts: buildChartsConfig(env),
    deprecations: Object.freeze(renamed.deprecations.map((d) => Object.freeze(d))),
  });
}
