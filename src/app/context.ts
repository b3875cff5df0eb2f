import { randomBytes } from 'node:crypto';
import type { Config } from '../../config/env.js';
import { generateAppKey, parseAppKey } from '../../config/app-key.js';
import { redactUrlText } from '../../config/secrets.js';
import type { Logger } from '../logger.js';
import { Resources } from '../lifecycle/resources.js';
import { connectMongo, countCommands } from '../db/mongo.js';
import { closeRedis, createRedis, describeTarget, redisReady, type RedisTarget } from '../db/redis.js';
import { startEmbeddedMongo } from '../embedded/mongo-server.js';
import { startEmbeddedRedis } from '../embedded/redis-server.js';
import { readEmbeddedState, removeEmbeddedState, writeEmbeddedState } from '../embedded/state-file.js';
import { assertEmbeddedAllowed } from '../embedded/guard.js';
import { EmbeddedUnavailableError } from '../core/errors.js';
import { UserService } from '../users/service.js';
import { registerModels } from '../models/index.js';
import { JobProducer } from '../../jobs/queues.js';
import { GlobalJobQueue } from '../../jobs/global-queue.js';
import { deliveryJob } from '../../jobs/deliver.js';
import { ForcedUpdateJobs } from '../../jobs/forced-update-queue.js';
import type { JobContext } from '../../jobs/context.js';
import { EanImports } from '../watch/ean-imports.js';
import { ForcedUpdates } from '../catalog/forced-updates.js';
import { Metrics } from '../core/metrics.js';
import { DailyUsage } from '../quota/daily-usage.js';
import { QuotaGovernor } from '../quota/governor.js';
import { CountryBreakers } from '../quota/breaker.js';
import { WatchService } from '../watch/service.js';
import { nudgePlanner } from '../scheduling/nudge.js';
import { WorldCatalog } from '../catalog/world-catalog.js';
import { AlertRules } from '../alerts/rules/service.js';
import { AlertFiring } from '../alerts/rules/firing.js';
import { AlertSequences } from '../alerts/rules/sequences.js';
import { Endpoints } from '../alerts/endpoints/endpoints.js';
import { AccountEvents } from '../alerts/endpoints/events.js';
import { DeliveryRecords } from '../alerts/deliveries/records.js';
import { DeliveredAlerts } from '../alerts/deliveries/alerts.js';
import { HeldDeliveries } from '../alerts/deliveries/held.js';
import { Digests } from '../alerts/deliveries/digests.js';
import { migrateAlertIdentities } from '../alerts/rules/migrate.js';
import { rekeyProductSearch } from '../catalog/search-rekey.js';
import { backfillDeals } from '../catalog/deals-backfill.js';
import { DealsCatalog } from '../catalog/deals.js';
import { resealStoredSecrets } from '../secrets/reseal.js';
import { Deliveries } from '../alerts/deliveries/service.js';
import { EmailAddresses } from '../alerts/endpoints/email-addresses.js';
import { FairTags } from '../fairness/fair-tags.js';
import { AccountWeights } from '../accounts/weights.js';
import { RefreshPolicies } from '../scheduling/policy-store.js';
import { ChangeNotices } from '../db/change-notices.js';
import { onWrites } from '../models/change-events.js';
import { documentTag, NoticedCache } from '../db/noticed-cache.js';
import type { AccountUser } from '../models/user.js';
import { ChartRenderer } from '../catalog/chart-renderer.js';

/** Bull Board's login: the configured one, or on the embedded default one made for this run. */
export interface BoardLogin {
  readonly user: string;
  readonly password: string;
  readonly readOnly: boolean;
  /** Made for this run: shown once on stdout with the demo token. */
  readonly generated: boolean;
}

/**
 * Everything a role needs, built once at start-up and passed down: configuration, connections,
 * queues, metrics, the logger and the services. Nothing here is a module-level singleton, so a test
 * builds the real app on its own database and Redis prefix. Jobs see it as their JobContext.
 */
export interface AppContext extends JobContext {
  readonly resources: Resources;
  readonly jobs: JobProducer;
  /** The accounts' alerts: what fires, and when (src/alerts/rules). */
  readonly alerts: AlertRules;
  /** Where deliveries go: the accounts' endpoints, their secrets and health (src/alerts/endpoints). */
  readonly endpoints: Endpoints;
  /** The deliveries' queue, which the deliveries (ctx.deliveries) fill. */
  readonly deliveryJobs: GlobalJobQueue<(typeof deliveryJob)['payload']>;
  /** Where Redis is, for the connections a role opens of its own (workers, subscribers). */
  readonly redisTarget: RedisTarget;
  readonly appKey: Buffer;
  readonly users: UserService;
  readonly imports: EanImports;
  readonly world: WorldCatalog;
  /** The deals feed's reads (src/catalog/deals.ts). */
  readonly deals: DealsCatalog;
  readonly forcedUpdates: ForcedUpdates;
  /** The MongoDB copy of the day's upstream calls per country (the governor's count survives Redis through it). */
  readonly usage: DailyUsage;
  readonly board: BoardLogin | undefined;
  /** Changes to collections whose answers api processes keep in memory, from every process. */
  readonly notices: ChangeNotices;
  /** True when this process started MongoDB and Redis itself. */
  readonly embedded: boolean;
  /** E-mail addresses' consent, daily caps and bounces: every mail passes it (src/alerts/endpoints/email-addresses.ts). */
  readonly emailAddresses: EmailAddresses;
  /** The price charts' render threads (started on the first chart). */
  readonly charts: ChartRenderer;
  /** Each country's breaker: open while the upstream refuses the country (src/quota/breaker.ts). */
  readonly breakers: CountryBreakers;
  /** The digests of held deliveries, sent by the scheduler's digest tick (src/alerts/deliveries/digests.ts). */
  readonly digests: Digests;
  /** The clock of digests and quiet hours: when a delivery fired, and which windows have closed. */
  readonly clock: () => Date;
}

export interface ContextOptions {
  /**
   * What to do when MONGODB_URI / REDIS_URL are unset: `start` the embedded servers (serving roles),
   * or `attach` to those of a running `shelfwatch all` (admin commands).
   */
  readonly embedded: 'start' | 'attach';
  /** Build missing indexes before serving (serving roles and tests; not admin commands). */
  readonly ensureIndexes: boolean;
  /** Tests: one database per file. */
  readonly dbName?: string;
  /** Process metrics (CPU, memory, event loop); tests turn them off. */
  readonly defaultMetrics?: boolean;
  /** Tests: one key prefix per file. */
  readonly redisPrefix?: string;
  /** `all` on the embedded default: Bull Board on, with a password made for this run, if none is configured. */
  readonly embeddedBoard?: boolean;
  /** Tests: the clock of digests and quiet hours, moved to simulate a day. */
  readonly clock?: () => Date;
  /** Tests: the driver's command events, to see what is sent (connectMongo's `commandEvents`). */
  readonly commandEvents?: boolean;
}

interface Services {
  mongoUri: string;
  redis: RedisTarget;
  appKey: Buffer;
  embedded: boolean;
}

async function resolveServices(config: Config, logger: Logger, resources: Resources, mode: ContextOptions['embedded']): Promise<Services> {
  const cluster = config.redis.cluster;
  if (cluster && config.mongo.uri && config.appKey) {
    // A cluster is never embedded; its seed nodes stand in for the URL when REDIS_URL gives no credentials.
    const url = config.redis.url ?? `redis://${cluster[0]!.host}:${cluster[0]!.port}`;
    return { mongoUri: config.mongo.uri, redis: { url, cluster }, appKey: config.appKey, embedded: false };
  }
  if (config.mongo.uri && config.redis.url && config.appKey) {
    return { mongoUri: config.mongo.uri, redis: { url: config.redis.url }, appKey: config.appKey, embedded: false };
  }
  assertEmbeddedAllowed(config);
  if (mode === 'attach') {
    const state = await readEmbeddedState(config.stateDir, (why) => logger.warn(why));
    const key = config.appKey ?? (state?.appKey ? parseAppKey(state.appKey) : undefined);
    const mongoUri = config.mongo.uri ?? state?.mongoUri;
    const redisUrl = config.redis.url ?? state?.redisUrl;
    if (!mongoUri || !redisUrl || !key) {
      // The running instance shares only what it generated; what it was given, this command needs too.
      const missing = [!mongoUri && 'MONGODB_URI', !redisUrl && 'REDIS_URL', !key && 'APP_KEY'].filter(Boolean).join(', ');
      throw new EmbeddedUnavailableError(
        state
          ? `the running shelfwatch (pid ${state.pid}) shares only the parts it generated: set ${missing} here as it has them`
          : 'no database to use: set MONGODB_URI, REDIS_URL and APP_KEY, or start `shelfwatch all` with nothing set in this directory first',
      );
    }
    if (state) logger.info({ pid: state.pid }, 'using the embedded parts of the running shelfwatch');
    return { mongoUri, redis: { url: redisUrl }, appKey: key, embedded: false };
  }

  let mongoUri = config.mongo.uri;
  if (!mongoUri) {
    const mongo = resources.own('embedded MongoDB', await startEmbeddedMongo(), (m) => m.stop());
    mongoUri = mongo.uri;
    logger.info({ uri: mongoUri }, 'embedded MongoDB started (memory only: data is lost on exit)');
  }
  let redisUrl = config.redis.url;
  if (!redisUrl) {
    const redis = resources.own('embedded Redis', await startEmbeddedRedis(), (r) => r.stop());
    redisUrl = redis.url;
    logger.info({ url: redactUrlText(redisUrl) }, 'embedded Redis started (memory only: data is lost on exit)');
  }
  let appKey = config.appKey;
  if (!appKey) {
    const generated = generateAppKey();
    appKey = parseAppKey(generated)!;
    logger.warn('APP_KEY is unset: using a random key for this run (tokens stored now cannot be read after a restart)');
  }
  const embedded = !config.mongo.uri || !config.redis.url;
  if (embedded) {
    // Only what this run generated: a URL or key from the environment stays out of any file.
    await writeEmbeddedState(config.stateDir, {
      pid: process.pid,
      ...(config.mongo.uri ? {} : { mongoUri }),
      ...(config.redis.url ? {} : { redisUrl }),
      ...(config.appKey ? {} : { appKey: `base64:${appKey.toString('base64')}` }),
    });
    resources.own('embedded state file', config.stateDir, (dir) => removeEmbeddedState(dir, process.pid));
  }
  return { mongoUri, redis: { url: redisUrl }, appKey, embedded };
}

export async function buildContext(config: Config, logger: Logger, opts: ContextOptions): Promise<AppContext> {
  const resources = new Resources(logger);
  try {
    const ep = await resolveServices(config, logger, resources, opts.embedded);
    const mongo = resources.own(
      'MongoDB',
      await connectMongo({ uri: ep.mongoUri, dbName: opts.dbName, commandEvents: opts.commandEvents }),
      (c) => c.close(),
    );
    registerModels(mongo);
    // Serving roles make sure every index exists (a no-op when it does; builds do not block writes on
    // MongoDB 4.2+). Dropping indexes that the schema no longer has is left to `db:sync-indexes`.
    if (opts.ensureIndexes) {
      await migrateAlertIdentities(mongo, logger);
      // Before the deals indexes are built: until they are, products may lack the figures they index.
      await backfillDeals(mongo, logger);
      await Promise.all(Object.values(mongo.models).map((m) => m.createIndexes()));
      await rekeyProductSearch(mongo, logger);
      // Secrets sealed the old way are sealed again, bound to their records (safe in several processes at once).
      await resealStoredSecrets(mongo, ep.appKey, logger);
    }
    const redis = resources.own('Redis', createRedis(ep.redis, 'command', logger, 'api'), closeRedis);
    await redisReady(redis, 10_000).catch((err: Error) => {
      throw new EmbeddedUnavailableError(
        `Redis at ${redactUrlText(describeTarget(ep.redis))} does not answer (${err.message}); check REDIS_URL${ep.redis.cluster ? ' and REDIS_CLUSTER_NODES' : ''}`,
      );
    });
    const redisPrefix = opts.redisPrefix ?? config.redis.prefix;
    // Every process tells the others of its writes; only those that keep answers listen (NoticedCache).
    const notices = resources.own('change notices', new ChangeNotices(redis, redisPrefix, logger), (n) => n.close());
    onWrites(mongo, (change) => notices.changed(change));
    const fair = new FairTags(redis, redisPrefix);
    const jobs = resources.own('job queues', new JobProducer(redis, redisPrefix, logger, fair), (j) => j.close());
    const metrics = new Metrics({ defaultMetrics: opts.defaultMetrics ?? true });
    countCommands(mongo, () => metrics.mongoCommands.inc());
    // Closes after the governor and the workers that count calls, before MongoDB: the last copies go out.
    const usage = resources.own('quota usage copy', new DailyUsage(mongo), (u) => u.settled());
    const quota = resources.own('quota governor', new QuotaGovernor(redis, redisPrefix, { ...config.quota, usage, metrics }), (g) =>
      g.close(),
    );
    const breakers = new CountryBreakers({
      redis,
      prefix: redisPrefix,
      options: config.quota.breaker,
      queues: (country, cls) => jobs.queue(country, cls),
      logger,
      metrics,
    });
    const weights = new AccountWeights(mongo);
    const watches = new WatchService(mongo, config, () => void nudgePlanner(redis, redisPrefix));
    const records = new DeliveryRecords(mongo);
    const sequences = new AlertSequences(mongo);
    const endpoints = new Endpoints(mongo, ep.appKey, new AccountEvents(mongo), { maxEndpoints: config.accounts.maxEndpoints, records });
    const alerts = new AlertRules({ conn: mongo, config, appKey: ep.appKey, watches, endpoints, sequences, records });
    const deliveryJobs = resources.own('delivery queue', new GlobalJobQueue(deliveryJob, redis, redisPrefix, logger, config), (d) =>
      d.close(),
    );
    const clock = opts.clock ?? (() => new Date());
    const held = new HeldDeliveries(mongo);
    const deliveries = new Deliveries({
      jobs: deliveryJobs,
      logger,
      config,
      fair,
      weights,
      firing: new AlertFiring(mongo),
      rules: alerts,
      sequences,
      endpoints,
      records,
      alerts: new DeliveredAlerts(mongo),
      held,
      now: clock,
    });
    const digests = new Digests({ held, deliveries, endpoints, logger, now: clock });
    const policies = new RefreshPolicies(redis, redisPrefix);
    // Confirmation mails under way finish (or give up) before MongoDB closes.
    const emailAddresses = resources.own(
      'confirmation mails',
      new EmailAddresses({ conn: mongo, redis, redisPrefix, config, appKey: ep.appKey, logger }),
      (e) => e.settled(),
    );
    const base = { config, logger, mongo, redis, redisPrefix, jobs, quota, metrics, watches, deliveries, fair, weights, policies };
    // Owned here, before any role starts: it closes after the HTTP server has drained.
    const forcedJobs = resources.own('forced updates', new ForcedUpdateJobs(jobs, { redisTarget: ep.redis, redisPrefix, logger }), (f) =>
      f.close(),
    );
    const forcedUpdates = new ForcedUpdates({ ...base, jobs: forcedJobs, stopping: resources.stopping });
    return {
      ...base,
      alerts,
      endpoints,
      deliveryJobs,
      resources,
      redisTarget: ep.redis,
      appKey: ep.appKey,
      users: new UserService(
        mongo,
        ep.appKey,
        // A token's account, kept until a change to that account: a rotated token or a changed weight
        // is seen at once in this process and as soon as the notice arrives in the others.
        resources.own(
          'account cache',
          new NoticedCache<AccountUser>(notices, {
            topics: ['users'],
            ttlMs: config.accountCacheTtlMs,
            maxEntries: 10_000,
            tagsOf: (account) => [documentTag('users', account._id.toHexString())],
            count: (outcome) => metrics.cacheReads.inc({ cache: 'accounts', outcome }),
          }),
          (c) => c.close(),
        ),
      ),
      imports: new EanImports(base),
      world: new WorldCatalog(mongo, config.world.totalTtlMs, config.countries),
      deals: new DealsCatalog(mongo),
      forcedUpdates,
      usage,
      breakers,
      digests,
      clock,
      board: boardLogin(config, ep.embedded && opts.embeddedBoard === true),
      notices,
      embedded: ep.embedded,
      emailAddresses,
      // Owned here, before any role starts: its threads end after the HTTP server has drained.
      charts: resources.own('chart render threads', new ChartRenderer(config.charts), (c) => c.close()),
    };
  } catch (err) {
    await resources.close();
    throw err;
  }
}

function boardLogin(config: Config, embedded: boolean): BoardLogin | undefined {
  const configured = config.board;
  if (configured) return { ...configured, generated: false };
  return embedded ? { user: 'admin', password: randomBytes(15).toString('base64url'), readOnly: true, generated: true } : undefined;
}
