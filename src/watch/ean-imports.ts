import mongoose, { Types, type Connection } from 'mongoose';
import type { Redis } from '../db/redis.js';
import type { Config } from '../../config/env.js';
import type { Country } from '../core/identifiers.js';
import { isDuplicateKey, OBJECT_ID_RE } from '../db/mongo.js';
import { DailyAccountLimitError, TooManyRequestsError } from '../core/errors.js';
import { addDaily, takeDaily } from '../accounts/limits.js';
import type { AccountWeights } from '../accounts/weights.js';
import type { AccountRef } from '../fairness/fair-classes.js';
import { quotaDayOf } from '../quota/quota-day.js';
import { eanImportModel, type CountryImportStatus, type EanImportDoc } from '../models/ean-import.js';

/**
 * An EAN import, from start to end. `POST /api/watch/ean` creates it and one resolve job per
 * country; each job reads one search page of the code in its country, writes the products it lists
 * and adds their ASINs to the user's watchlist, and enqueues the next page while the search has
 * more. A country's last page (or its final failure) records the country's answer, and the answer
 * that closes the last open country settles the import: done, not_found or failed. When the day's
 * quota is spent a page waits for the next quota day and says so on the import. Jobs lost with
 * Redis come back from the scheduler's slow tick, which re-queues the page each open country is at.
 *
 * States (src/models/ean-import.ts): queued → resolving (a page or a country answered, others
 * open) → done | not_found | failed.
 */

/** One country's search of an import, as its resolve job carries it (jobs/ean-resolve.ts). */
export interface EanPage {
  readonly country: Country;
  readonly importId: string;
  readonly userId: string;
  readonly ean: string;
}

/** Where resolve jobs go: the country's import queue (the job producer, jobs/queues.ts). */
export interface EanResolveQueue {
  add(name: 'ean.resolve', data: EanPage & { page: number }, opts: { jobId: string }, account: AccountRef): Promise<string>;
}

/** What imports use of the application's context. */
export interface EanImportsDeps {
  readonly mongo: Connection;
  readonly config: Pick<Config, 'countries' | 'accounts' | 'workers' | 'quota'>;
  readonly jobs: EanResolveQueue;
  readonly weights: Pick<AccountWeights, 'of'>;
  /** Fail-fast commands: the account's daily count. */
  readonly redis: Redis;
  readonly redisPrefix: string;
}

/**
 * The id of an import's resolve job for one country and page. Every producer (the api, the job of
 * the page before, the scheduler's sweep) uses it, so a page is never queued twice while its job
 * exists. Page 1 has the shorter form, which jobs already in Redis carry.
 */
export function eanResolveJobId(importId: string, country: string, page: number): string {
  return page === 1 ? `ean-${importId}-${country}` : `ean-${importId}-${country}-p${page}`;
}

/**
 * Queues one page of an import in its country's import queue, at the importing account's fair place
 * (src/fairness/): one account's many imports never hold another's behind them.
 */
export async function enqueuePage(ctx: Pick<EanImportsDeps, 'jobs' | 'weights'>, data: EanPage, page: number): Promise<string> {
  const account = { id: data.userId, weight: await ctx.weights.of(data.userId) };
  const { country, importId, userId, ean } = data;
  return ctx.jobs.add(
    'ean.resolve',
    { country, importId, userId, ean, page },
    { jobId: eanResolveJobId(importId, country, page) },
    account,
  );
}

/** How long a settled import's record is kept (a TTL index on `expires_at`). */
export const SETTLED_IMPORT_DAYS = 30;

/** How long a client refused for too many pending imports waits before asking again (s). */
const PENDING_EAN_RETRY_AFTER_S = 60;

/** `pending_key` of a user's imports: `<user>:<ean>`, so all of one user's share this prefix. */
function pendingKeyPrefix(userId: Types.ObjectId): string {
  return `${userId.toHexString()}:`;
}

/** Starting and reading imports, for the api. */
export class EanImports {
  constructor(private readonly ctx: EanImportsDeps) {}

  private get mongo(): Connection {
    return this.ctx.mongo;
  }

  private get config(): Pick<Config, 'countries' | 'accounts' | 'workers' | 'quota'> {
    return this.ctx.config;
  }

  /**
   * Starts an import of `ean` for the user: one resolve job per configured country. While an import
   * of the same code is pending for this user, answers that one instead of starting another. A new
   * import past ACCOUNT_MAX_PENDING_EAN, or past the day's ACCOUNT_MAX_EAN_PER_DAY, is refused
   * with 429 and nothing is written.
   */
  async start(userId: Types.ObjectId, ean: string): Promise<{ entry: EanImportDoc; created: boolean }> {
    const imports = eanImportModel(this.mongo);
    const pendingKey = `${pendingKeyPrefix(userId)}${ean}`;
    const pending = await imports.findOne({ pending_key: pendingKey });
    if (pending) return { entry: pending, created: false };
    await this.checkPendingCap(userId);
    const day = quotaDayOf(Date.now(), this.config.quota.dayTimeZone);
    const id = userId.toHexString();
    const { maxEanPerDay } = this.config.accounts;
    const taken = await takeDaily(this.ctx.redis, this.ctx.redisPrefix, id, 'ean', day.key, maxEanPerDay);
    if (!taken.ok) throw new DailyAccountLimitError(taken.limit, 'EAN imports', 'ACCOUNT_MAX_EAN_PER_DAY', (day.end - Date.now()) / 1_000);
    const giveBack = () =>
      maxEanPerDay > 0 ? addDaily(this.ctx.redis, this.ctx.redisPrefix, id, 'ean', day.key, -1).catch(() => undefined) : undefined;
    let entry: EanImportDoc;
    try {
      entry = await imports.create({
        user_id: userId,
        ean,
        status: 'queued',
        pending_key: pendingKey,
        countries: this.config.countries.map((country) => ({ country, status: 'queued', asins: [], error: null })),
      });
    } catch (err) {
      await giveBack();
      if (!isDuplicateKey(err)) throw err;
      const winner = await imports.findOne({ pending_key: pendingKey });
      if (!winner) throw err;
      return { entry: winner, created: false };
    }
    try {
      const data = { importId: entry._id.toHexString(), userId: userId.toHexString(), ean, page: 1 };
      await Promise.all(this.config.countries.map((country) => enqueuePage(this.ctx, { ...data, country }, 1)));
    } catch (err) {
      // Without its jobs the import would stay queued for ever: remove it, and the client may retry.
      await imports.deleteOne({ _id: entry._id });
      await giveBack();
      throw err;
    }
    return { entry, created: true };
  }

  async find(userId: Types.ObjectId, id: string): Promise<EanImportDoc | null> {
    if (!OBJECT_ID_RE.test(id.toLowerCase())) return null;
    return eanImportModel(this.mongo).findOne({ _id: id, user_id: userId });
  }

  /**
   * `pending_key` is set exactly while an import is queued or resolving (it goes in the update that
   * ends the import), so counting the account's keys counts its pending imports; the prefix is a
   * range of the key's unique index, which the account's finished imports are not in. Concurrent
   * imports may each pass the check and leave the account a few over, which the cap tolerates.
   */
  private async checkPendingCap(userId: Types.ObjectId): Promise<void> {
    const { maxPendingEan } = this.config.accounts;
    if (maxPendingEan === 0) return;
    const pendingCount = await eanImportModel(this.mongo).countDocuments({ pending_key: new RegExp(`^${pendingKeyPrefix(userId)}`) });
    if (pendingCount >= maxPendingEan) {
      throw new TooManyRequestsError(
        `You may have at most ${maxPendingEan} EAN imports pending (ACCOUNT_MAX_PENDING_EAN); try again when one has finished.`,
        PENDING_EAN_RETRY_AFTER_S,
      );
    }
  }
}

/**
 * Records one country's answer on the import, then settles the import once every country has
 * answered: done when any found an ASIN, failed when none found one and some failed, else not
 * found. Each country writes its own slot, so two countries finishing at once cannot lose a write;
 * whichever settles last sees all answers. `asins` null keeps what earlier pages found (a failure).
 */
export async function recordCountryAnswer(
  mongo: Connection,
  importId: string,
  country: Country,
  status: CountryImportStatus,
  asins: readonly string[] | null,
  error: string | null = null,
): Promise<void> {
  const imports = eanImportModel(mongo);
  const id = new Types.ObjectId(importId);
  await imports.updateOne(
    { _id: id, 'countries.country': country },
    {
      $set: {
        'countries.$.status': status,
        'countries.$.error': error,
        'countries.$.waiting_until': null,
        ...(asins ? { 'countries.$.asins': [...asins] } : {}),
      },
    },
  );
  const doc = await imports.findById(id).lean();
  if (!doc) return;
  const open = doc.countries.some((c) => c.status === 'queued');
  if (open) {
    if (doc.status === 'queued') await imports.updateOne({ _id: id, status: 'queued' }, { $set: { status: 'resolving' } });
    return;
  }
  const found = doc.countries.some((c) => c.asins.length > 0);
  const failed = doc.countries.some((c) => c.status === 'failed');
  await imports.updateOne(
    { _id: id },
    {
      $set: {
        status: found ? 'done' : failed ? 'failed' : 'not_found',
        expires_at: new Date(Date.now() + SETTLED_IMPORT_DAYS * 86_400_000),
      },
      $unset: { pending_key: 1 },
    },
  );
}

/**
 * Puts back the resolve jobs of imports that have waited longer than a lease: their jobs may have
 * been lost with Redis. The job ids are the ones the api used, so a job that still exists is not
 * added twice, and the handler skips a country that has answered meanwhile. A country that is no
 * longer in COUNTRIES has no worker to answer: its slot fails with a reason, so the import can end
 * (and its code be imported again) instead of resolving for ever.
 */
export async function requeueStalledImports(ctx: EanImportsDeps, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - ctx.config.workers.scheduler.leaseMs);
  const stalled = await eanImportModel(ctx.mongo)
    .find({ status: mongoose.trusted({ $in: ['queued', 'resolving'] }), updated_at: mongoose.trusted({ $lt: cutoff }) })
    .sort({ updated_at: 1 })
    .limit(1_000)
    .lean();
  let added = 0;
  for (const imp of stalled) {
    const importId = imp._id.toHexString();
    for (const c of imp.countries) {
      if (c.status !== 'queued') continue;
      if (!ctx.config.countries.includes(c.country)) {
        await recordCountryAnswer(ctx.mongo, importId, c.country, 'failed', null, `${c.country} is no longer in COUNTRIES`);
        continue;
      }
      const data = { country: c.country, importId, userId: imp.user_id.toHexString(), ean: imp.ean, page: c.page ?? 1 };
      await enqueuePage(ctx, data, data.page);
      added++;
    }
  }
  return added;
}
