import { randomBytes } from 'node:crypto';
import mongoose, { type Connection, type Types } from 'mongoose';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import { deliveryModel, type DeliveryFields, type DeliveryStatus } from '../../models/delivery.js';
import { withTimeout } from '../../db/mongo.js';
import { findPage, type Page, type PageRequest } from '../../db/page.js';

export type DeliveryRecord = Omit<DeliveryFields, 'payload' | 'replay_token'>;

/** What an attempt of a delivery ended with, for its record. */
export interface AttemptRecord {
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly responseCode: number | null;
  readonly error: string | null;
}

/** A delivery as queued: its id (the job's), where it goes, what fired it and the job's payload. */
export interface QueuedDelivery {
  readonly id: string;
  readonly endpointId: Types.ObjectId;
  readonly userId: Types.ObjectId;
  readonly alertIds: readonly Types.ObjectId[];
  readonly payload: unknown;
}

/** A delivery taken for a replay: its record as it now stands, and the payload to queue again. */
export interface Claimed {
  readonly record: DeliveryRecord;
  readonly payload: unknown;
}

/** Statuses a replay takes: the delivery ended without an acknowledgement. */
export const REPLAYABLE: readonly DeliveryStatus[] = ['failed', 'gone'];

/** Oldest records deleted at most per trim: a lowered DELIVERY_RECORDS_PER_ENDPOINT catches up over several writes. */
const TRIM_BATCH = 1_000;

const NEWEST_FIRST = { created_at: -1, _id: -1 } as const;

/**
 * The deliveries' records: made when a delivery is queued, updated by each attempt, read by the
 * account (GET /api/deliveries, an alert's deliveries) and taken again by a replay. Bounded by age
 * (a TTL of DELIVERY_RECORD_DAYS) and per endpoint (`trim`). Calls from the delivery path have
 * deadlines, as in endpoints.ts.
 */
export class DeliveryRecords {
  constructor(private readonly conn: Connection) {}

  private get records() {
    return deliveryModel(this.conn);
  }

  /**
   * The records of queued deliveries, made once: a change seen again leaves its record as it is.
   * Answers how many records each endpoint got that did not exist before (by endpoint id).
   */
  async recordQueued(deliveries: readonly QueuedDelivery[]): Promise<Map<string, number>> {
    const added = new Map<string, number>();
    if (deliveries.length === 0) return added;
    const res = await this.write(
      this.records.bulkWrite(
        deliveries.map((d) => ({
          updateOne: {
            filter: { _id: d.id },
            update: {
              $setOnInsert: {
                alert_id: d.alertIds[0]!,
                alert_ids: [...d.alertIds],
                endpoint_id: d.endpointId,
                user_id: d.userId,
                status: 'pending' as const,
                attempts: 0,
                payload: d.payload,
              },
            },
            upsert: true,
          },
        })),
        { ordered: false },
      ),
    );
    for (const index of Object.keys(res.upsertedIds ?? {})) {
      const key = deliveries[Number(index)]!.endpointId.toHexString();
      added.set(key, (added.get(key) ?? 0) + 1);
    }
    return added;
  }

  /**
   * Deletes the endpoint's oldest records beyond `max` (at most TRIM_BATCH of them); answers how
   * many it keeps. Two index reads and one delete: run only when the endpoint's count says it is over.
   */
  async trim(endpointId: Types.ObjectId, max: number): Promise<number> {
    const n = await this.records.countDocuments({ endpoint_id: endpointId }).maxTimeMS(DELIVERY_DB_TIMEOUT_MS);
    if (n <= max) return n;
    const oldest = await this.records
      .find({ endpoint_id: endpointId })
      .sort({ created_at: 1 })
      .limit(Math.min(n - max, TRIM_BATCH))
      .select({ _id: 1 })
      .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
      .lean();
    const res = await this.write(this.records.deleteMany({ _id: mongoose.trusted({ $in: oldest.map((r) => r._id) }) }).exec());
    return n - res.deletedCount;
  }

  /**
   * What an attempt got. An update only: a record trimmed meanwhile stays gone (the attempt still
   * happens), rather than coming back without its payload.
   */
  async recordAttempt(id: string, attempt: AttemptRecord, now: Date): Promise<void> {
    await this.write(
      this.records
        .updateOne(
          { _id: id },
          {
            $set: {
              status: attempt.status,
              attempts: attempt.attempts,
              response_code: attempt.responseCode,
              last_error: attempt.error,
              ...(attempt.status === 'delivered' ? { delivered_at: now } : {}),
            },
          },
        )
        .exec(),
    );
  }

  /** A delivery BullMQ gave up on outside an attempt (stalled too often): failed, if still pending. */
  async failIfPending(id: string, error: string): Promise<void> {
    await this.write(this.records.updateOne({ _id: id, status: 'pending' }, { $set: { status: 'failed', last_error: error } }).exec());
  }

  /** The account's deliveries of these statuses, newest first. */
  listForAccount(userId: Types.ObjectId, statuses: readonly DeliveryStatus[], page: PageRequest): Promise<Page<DeliveryRecord>> {
    return findPage(this.records, { user_id: userId, status: mongoose.trusted({ $in: [...statuses] }) }, NEWEST_FIRST, page);
  }

  /** The account's delivery with this id; null for another account's or none. */
  async find(userId: Types.ObjectId, id: string): Promise<(DeliveryRecord & { replayable: boolean }) | null> {
    const doc = await this.records.findOne({ _id: id, user_id: userId }).select('+payload').lean();
    if (!doc) return null;
    const { payload, ...record } = doc;
    return { ...record, replayable: payload !== undefined && payload !== null };
  }

  /** The deliveries an alert took part in, newest first: records of before endpoints name it as `alert_id`. */
  forAlert(alertId: Types.ObjectId, page: PageRequest): Promise<Page<DeliveryRecord>> {
    return findPage(this.records, { $or: [{ alert_ids: alertId }, { alert_id: alertId }] }, NEWEST_FIRST, page);
  }

  /** A deleted alert's records: those of it alone (a delivery that fired others too stays theirs). */
  async removeForAlert(alertId: Types.ObjectId): Promise<void> {
    await this.records.deleteMany({
      $or: [{ alert_ids: [alertId] }, { alert_id: alertId, alert_ids: mongoose.trusted({ $exists: false }) }],
    });
  }

  /** A removed endpoint's records: nothing can be sent or replayed to it any more. */
  async removeForEndpoint(endpointId: Types.ObjectId): Promise<void> {
    await this.records.deleteMany({ endpoint_id: endpointId });
  }

  /** When the oldest delivery still waiting for an acknowledgement was queued; null when none waits. */
  async oldestPending(): Promise<Date | null> {
    const oldest = await this.records.findOne({ status: 'pending' }).sort({ created_at: 1 }).select({ created_at: 1 }).lean();
    return oldest?.created_at ?? null;
  }

  /**
   * Takes one delivery for a replay if it ended undelivered and kept its payload: pending again,
   * attempts from 0, one more replay. Conditional, so of two concurrent replays one takes it.
   */
  async claim(userId: Types.ObjectId, id: string): Promise<Claimed | null> {
    const doc = await this.records
      .findOneAndUpdate(
        { _id: id, user_id: userId, status: mongoose.trusted({ $in: [...REPLAYABLE] }), payload: mongoose.trusted({ $exists: true }) },
        { $set: { status: 'pending', attempts: 0 }, $inc: { replays: 1 } },
        { returnDocument: 'after' },
      )
      .select('+payload')
      .lean();
    if (!doc) return null;
    const { payload, ...record } = doc;
    return { record, payload };
  }

  /**
   * Takes up to `limit` of the account's undelivered deliveries for a replay, oldest first, leaving
   * those of `skipEndpoints` (disabled ones); `endpointId` narrows it to one endpoint. The records
   * are marked with a token of this call, so a concurrent bulk replay cannot take the same ones.
   */
  async claimMany(
    userId: Types.ObjectId,
    opts: { endpointId?: Types.ObjectId; skipEndpoints: readonly Types.ObjectId[]; limit: number },
  ): Promise<Claimed[]> {
    const filter = this.replayableFilter(userId, opts);
    const picked = await this.records.find(filter).sort({ created_at: 1 }).limit(opts.limit).select({ _id: 1 }).lean();
    if (picked.length === 0) return [];
    const token = randomBytes(12).toString('hex');
    await this.records.updateMany(
      { ...filter, _id: mongoose.trusted({ $in: picked.map((p) => p._id) }) },
      { $set: { status: 'pending', attempts: 0, replay_token: token }, $inc: { replays: 1 } },
    );
    const mine = await this.records.find({ replay_token: token }).select('+payload').lean();
    return mine.map(({ payload, replay_token: _t, ...record }) => ({ record, payload }));
  }

  /** Claimed deliveries whose replay could not be queued: failed again, for another replay to take. */
  async unclaim(ids: readonly string[]): Promise<void> {
    await this.records.updateMany(
      { _id: mongoose.trusted({ $in: [...ids] }), status: 'pending' },
      { $set: { status: 'failed', last_error: 'the replay could not be queued; replay it again' } },
    );
  }

  /** Whether the account has undelivered deliveries left to replay with these options. */
  async anyReplayable(
    userId: Types.ObjectId,
    opts: { endpointId?: Types.ObjectId; skipEndpoints: readonly Types.ObjectId[] },
  ): Promise<boolean> {
    return (await this.records.exists(this.replayableFilter(userId, opts))) !== null;
  }

  /** Undelivered deliveries of these endpoints (the disabled ones a bulk replay leaves). */
  countUndelivered(userId: Types.ObjectId, endpointIds: readonly Types.ObjectId[]): Promise<number> {
    if (endpointIds.length === 0) return Promise.resolve(0);
    return this.records.countDocuments({
      user_id: userId,
      status: mongoose.trusted({ $in: [...REPLAYABLE] }),
      endpoint_id: mongoose.trusted({ $in: [...endpointIds] }),
    });
  }

  private replayableFilter(userId: Types.ObjectId, opts: { endpointId?: Types.ObjectId; skipEndpoints: readonly Types.ObjectId[] }) {
    return {
      user_id: userId,
      status: mongoose.trusted({ $in: [...REPLAYABLE] }),
      payload: mongoose.trusted({ $exists: true }),
      endpoint_id: opts.endpointId ?? mongoose.trusted({ $nin: [...opts.skipEndpoints] }),
    };
  }

  private write<T>(p: Promise<T>): Promise<T> {
    return withTimeout(p, DELIVERY_DB_TIMEOUT_MS, 'delivery record write');
  }
}
