import mongoose, { type Connection, type Types } from 'mongoose';
import type { Config } from '../../config/env.js';
import type { JobProducer } from '../../jobs/queues.js';
import { eanResolveJobId } from '../../jobs/registry.js';
import { watchModel, type WatchDoc } from '../models/watch.js';
import { eanImportModel, type EanImportDoc } from '../models/ean-import.js';
import { applyWatchChange } from './priority.js';

function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === 11000;
}

/** A user's watchlist: ASINs (with priority), browse nodes, and EAN imports. */
export class WatchService {
  constructor(
    private readonly conn: Connection,
    private readonly config: Pick<Config, 'countries' | 'refresh'>,
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

  /** Adds the ASIN or changes its priority; tells whether the entry was created. */
  async watchAsin(userId: Types.ObjectId, asin: string, priority: 0 | 1, source: 'api' | 'ean' = 'api'): Promise<{ entry: WatchDoc; created: boolean }> {
    const res = await this.upsertEntry(userId, 'asin', asin, { priority }, source);
    await this.changed([asin]);
    return res;
  }

  /** Adds ASINs found by an import at priority 0, leaving entries the user already has as they are. */
  async watchFoundAsins(userId: Types.ObjectId, asins: readonly string[]): Promise<void> {
    if (asins.length === 0) return;
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
    await this.changed(asins);
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
   * of the same code is pending for this user, answers that one instead of starting another.
   */
  async importEan(userId: Types.ObjectId, ean: string): Promise<{ entry: EanImportDoc; created: boolean }> {
    const imports = eanImportModel(this.conn);
    const pendingKey = `${userId.toHexString()}:${ean}`;
    const pending = await imports.findOne({ pending_key: pendingKey });
    if (pending) return { entry: pending, created: false };
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

  async findImport(userId: Types.ObjectId, id: string): Promise<EanImportDoc | null> {
    if (!mongoose.isValidObjectId(id) || !/^[0-9a-f]{24}$/i.test(id)) return null;
    return eanImportModel(this.conn).findOne({ _id: id, user_id: userId });
  }
}
