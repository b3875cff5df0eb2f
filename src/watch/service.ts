import mongoose, { type Connection, type Types } from 'mongoose';
import type { Config } from '../../config/env.js';
import type { JobProducer } from '../../jobs/queues.js';
import { eanResolveJobId } from '../../jobs/registry.js';
import { watchModel, type WatchDoc } from '../models/watch.js';
import { eanImportModel, type EanImportDoc } from '../models/ean-import.js';
import { applyWatchChange } from './priority.js';
import { HttpError, ValidationError } from '../errors/index.js';

function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 11000;
}

/** How long a client refused for too many pending imports waits before asking again (s). */
const PENDING_EAN_RETRY_AFTER_S = 60;

/** `pending_key` of a user's imports: `<user>:<ean>`, so all of one user's share this prefix. */
function pendingKeyPrefix(userId: Types.ObjectId): string {
  return `${userId.toHexString()}:`;
}

/** A user's watchlist: ASINs (with priority), browse nodes, and EAN imports. */
export class WatchService {
  constructor(
    private readonly conn: Connection,
    private readonly config: Pick<Config, 'countries' | 'refresh' | 'accounts'>,
    private readonly jobs: JobProducer,
    /** Called when a change made products due now, so a scheduler plans without waiting for its tick. */
    private readonly onDue: () => void = () => undefined,
  ) {}

  private async changed(asins: readonly string[]): Promise<void> {
    if ((await applyWatchChange(this.conn, this.config, asins)) > 0) this.onDue();
  }

  private get watches() {
    return watchModel(this.conn);
  }

  /**
   * Adds the ASIN or changes its priority; tells whether the entry was created. Refuses (422) what
   * would take the account past its caps, before writing anything.
   */
  async watchAsin(userId: Types.ObjectId, asin: string, priority: 0 | 1, source: 'api' | 'ean' = 'api'): Promise<{ entry: WatchDoc; created: boolean }> {
    await this.checkAsinCaps(userId, asin, priority);
    const res = await this.upsertEntry(userId, 'asin', asin, { priority }, source);
    await this.changed([asin]);
    return res;
  }

  /**
   * ACCOUNT_MAX_WATCHES bounds new entries, ACCOUNT_MAX_P1_WATCHES raises to priority 1; lowering a
   * priority or re-sending the one an entry has is always allowed. Both counts run on index
   * prefixes of the account's own entries. The check comes before the write, so concurrent adds of
   * one account may each pass and leave it a few over: the caps keep accounts fair, and a few
   * entries more do not change that, while a transaction for every add would cost every account.
   */
  private async checkAsinCaps(userId: Types.ObjectId, asin: string, priority: 0 | 1): Promise<void> {
    const { maxWatches, maxP1Watches } = this.config.accounts;
    const checkP1 = priority === 1 && maxP1Watches > 0;
    if (maxWatches === 0 && !checkP1) return;
    const current = await this.watches.findOne({ user_id: userId, kind: 'asin', key: asin }).select({ priority: 1 }).lean();
    const errors: Record<string, string[]> = {};
    if (!current && maxWatches > 0 && (await this.watches.countDocuments({ user_id: userId, kind: 'asin' })) >= maxWatches) {
      errors.asin = [`You may watch at most ${maxWatches} ASINs (ACCOUNT_MAX_WATCHES).`];
    }
    if (checkP1 && current?.priority !== 1 && (await this.watches.countDocuments({ user_id: userId, kind: 'asin', priority: 1 })) >= maxP1Watches) {
      errors.priority = [`You may watch at most ${maxP1Watches} ASINs at priority 1 (ACCOUNT_MAX_P1_WATCHES).`];
    }
    if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  }

  /**
   * Adds ASINs found by an import at priority 0, leaving entries the user already has as they are.
   * The import itself never fails on ACCOUNT_MAX_WATCHES: it adds the ASINs that fit, in the
   * upstream's order, and returns those it left out. Two countries' jobs of one import may run at
   * once and both see the same room, leaving the account a few over, as with concurrent adds.
   */
  async watchFoundAsins(userId: Types.ObjectId, asins: readonly string[]): Promise<string[]> {
    const found = [...new Set(asins)];
    if (found.length === 0) return [];
    let add = found;
    let leftOut: string[] = [];
    const { maxWatches } = this.config.accounts;
    if (maxWatches > 0) {
      const have = await this.watches
        .find({ user_id: userId, kind: 'asin', key: mongoose.trusted({ $in: found }) })
        .select({ key: 1 })
        .lean();
      const haveKeys = new Set(have.map((w) => w.key));
      const fresh = found.filter((a) => !haveKeys.has(a));
      const room = Math.max(0, maxWatches - (await this.watches.countDocuments({ user_id: userId, kind: 'asin' })));
      add = fresh.slice(0, room);
      leftOut = fresh.slice(room);
    }
    if (add.length > 0) await this.addFound(userId, add);
    // Left-out ASINs too: a product only this import would have watched stays off the schedule.
    await this.changed(found);
    return leftOut;
  }

  private async addFound(userId: Types.ObjectId, asins: readonly string[]): Promise<void> {
    await this.watches.bulkWrite(
      asins.map((asin) => ({
        updateOne: {
          filter: { user_id: userId, kind: 'asin' as const, key: asin },
          update: { $setOnInsert: { priority: 0 as const, source: 'ean' as const, last_crawl_at: null, last_crawl_count: null } },
          upsert: true,
        },
      })),
      { ordered: false },
    ).catch((err: unknown) => {
      if (!isDuplicateKey(err)) throw err;
    });
  }

  async unwatchAsin(userId: Types.ObjectId, asin: string): Promise<WatchDoc | null> {
    const removed = await this.watches.findOneAndDelete({ user_id: userId, kind: 'asin', key: asin });
    if (removed) await this.changed([asin]);
    return removed;
  }

  async watchBrowse(userId: Types.ObjectId, nodeId: string): Promise<{ entry: WatchDoc; created: boolean }> {
    return this.upsertEntry(userId, 'browse', nodeId, {}, 'api');
  }

  async unwatchBrowse(userId: Types.ObjectId, nodeId: string): Promise<WatchDoc | null> {
    return this.watches.findOneAndDelete({ user_id: userId, kind: 'browse', key: nodeId });
  }

  private async upsertEntry(userId: Types.ObjectId, kind: 'asin' | 'browse', key: string, set: { priority?: 0 | 1 }, source: 'api' | 'ean'): Promise<{ entry: WatchDoc; created: boolean }> {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.watches.findOneAndUpdate(
          { user_id: userId, kind, key },
          { $set: set, $setOnInsert: { source, last_crawl_at: null, last_crawl_count: null } },
          { upsert: true, returnDocument: 'after', includeResultMetadata: true },
        );
        return { entry: res.value!, created: res.lastErrorObject?.updatedExisting === false };
      } catch (err) {
        // Two concurrent adds of one entry: the loser finds the winner's entry on its second try.
        if (isDuplicateKey(err) && attempt === 0) continue;
        throw err;
      }
    }
  }

  /**
   * Starts an import of `ean` for the user: one resolve job per configured country. While an import
   * of the same code is pending for this user, answers that one instead of starting another. A new
   * import past ACCOUNT_MAX_PENDING_EAN is refused with 429.
   */
  async importEan(userId: Types.ObjectId, ean: string): Promise<{ entry: EanImportDoc; created: boolean }> {
    const imports = eanImportModel(this.conn);
    const pendingKey = `${pendingKeyPrefix(userId)}${ean}`;
    const pending = await imports.findOne({ pending_key: pendingKey });
    if (pending) return { entry: pending, created: false };
    await this.checkPendingEanCap(userId);
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
      if (!isDuplicateKey(err)) throw err;
      const winner = await imports.findOne({ pending_key: pendingKey });
      if (!winner) throw err;
      return { entry: winner, created: false };
    }
    try {
      const userIdHex = userId.toHexString();
      const importId = entry._id.toHexString();
      // Deterministic job ids: a retried request can never enqueue one country twice.
      await Promise.all(this.config.countries.map((country) =>
        this.jobs.add('ean.resolve', { country, importId, userId: userIdHex, ean, page: 1 }, { jobId: eanResolveJobId(importId, country, 1) })));
    } catch (err) {
      // Without its jobs the import would stay queued for ever: remove it, and the client may retry.
      await imports.deleteOne({ _id: entry._id });
      throw err;
    }
    return { entry, created: true };
  }

  /**
   * `pending_key` is set exactly while an import is queued or resolving (it goes in the update that
   * ends the import), so counting the account's keys counts its pending imports; the prefix is a
   * range of the key's unique index, which the account's finished imports are not in. Concurrent
   * imports may each pass the check and leave the account a few over, which the cap tolerates.
   */
  private async checkPendingEanCap(userId: Types.ObjectId): Promise<void> {
    const { maxPendingEan } = this.config.accounts;
    if (maxPendingEan === 0) return;
    const pendingCount = await eanImportModel(this.conn).countDocuments({ pending_key: new RegExp(`^${pendingKeyPrefix(userId)}`) });
    if (pendingCount >= maxPendingEan) {
      throw new HttpError(429, `You may have at most ${maxPendingEan} EAN imports pending (ACCOUNT_MAX_PENDING_EAN); try again when one has finished.`, { 'Retry-After': String(PENDING_EAN_RETRY_AFTER_S) });
    }
  }

  async findImport(userId: Types.ObjectId, id: string): Promise<EanImportDoc | null> {
    if (!mongoose.isValidObjectId(id) || !/^[0-9a-f]{24}$/i.test(id)) return null;
    return eanImportModel(this.conn).findOne({ _id: id, user_id: userId });
  }
}
