import mongoose, { Types, type Connection } from 'mongoose';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import { withTimeout } from '../../db/mongo.js';
import { heldDeliveryModel, type HeldDeliveryFields } from '../../models/held-delivery.js';
import { userModel } from '../../models/user.js';

/** A delivery to hold: its id, where it goes, what fired it, its content, and its window. */
export interface HeldDelivery {
  readonly id: string;
  readonly endpointId: Types.ObjectId;
  readonly userId: Types.ObjectId;
  readonly alertIds: readonly Types.ObjectId[];
  readonly payload: unknown;
  readonly firedAt: Date;
  readonly dueAt: Date;
}

/** The held deliveries one digest takes at most; more due for the same window make another digest. */
export const DIGEST_MAX_ITEMS = 200;
/** Held deliveries one tick takes at most: the rest wait for the next tick. */
const CLAIM_BATCH = 5_000;

export type HeldRecord = Pick<HeldDeliveryFields, '_id' | 'user_id' | 'endpoint_id' | 'alert_ids' | 'payload' | 'fired_at' | 'due_at'>;

/**
 * The deliveries waiting for a digest (`held_deliveries`). A tick first marks what is due with
 * the id of the digest that takes it (`claimDue`), then queues each marked digest and only then
 * deletes its records (`release`): a tick that dies in between leaves them marked, and the next
 * queues the same digest under the same id, which BullMQ adds once.
 */
export class HeldDeliveries {
  constructor(private readonly conn: Connection) {}

  private get held() {
    return heldDeliveryModel(this.conn);
  }

  /** Holds the deliveries; one already held (a batch seen again) stays as it is. */
  async hold(items: readonly HeldDelivery[]): Promise<void> {
    if (items.length === 0) return;
    await withTimeout(
      this.held
        .bulkWrite(
          items.map((h) => ({
            updateOne: {
              filter: { _id: h.id },
              update: {
                $setOnInsert: {
                  user_id: h.userId,
                  endpoint_id: h.endpointId,
                  alert_ids: [...h.alertIds],
                  payload: h.payload,
                  fired_at: h.firedAt,
                  due_at: h.dueAt,
                  digest_id: null,
                },
              },
              upsert: true,
            },
          })),
          { ordered: false },
        )
        .then(() => undefined),
      DELIVERY_DB_TIMEOUT_MS,
      'held deliveries',
    );
  }

  /**
   * Marks what is due at `now` and not yet taken with the digest that takes it: one per endpoint
   * and window, of at most DIGEST_MAX_ITEMS (the newest first).
   */
  async claimDue(now: Date): Promise<void> {
    const due = await this.held
      .find({ digest_id: null, due_at: mongoose.trusted({ $lte: now }) })
      .select({ _id: 1, endpoint_id: 1, due_at: 1, fired_at: 1 })
      .limit(CLAIM_BATCH)
      .lean();
    const windows = new Map<string, typeof due>();
    for (const h of due) {
      const key = `${h.endpoint_id.toHexString()}.digest.${h.due_at.getTime()}`;
      windows.set(key, [...(windows.get(key) ?? []), h]);
    }
    for (const [key, list] of windows) {
      list.sort((a, b) => b.fired_at.getTime() - a.fired_at.getTime() || (a._id < b._id ? 1 : -1));
      for (let i = 0; i < list.length; i += DIGEST_MAX_ITEMS) {
        const ids = list.slice(i, i + DIGEST_MAX_ITEMS).map((h) => h._id);
        // Fresh for each digest: a delivery held late for a window already sent (another process's
        // clock behind the scheduler's) makes a digest of its own rather than meeting a used job id.
        const digestId = `${key}.${new Types.ObjectId().toHexString()}`;
        await this.held.updateMany({ _id: mongoose.trusted({ $in: ids }), digest_id: null }, { $set: { digest_id: digestId } });
      }
    }
  }

  /** The marked digests, each with its held deliveries (at most CLAIM_BATCH in all). */
  async claimed(): Promise<Map<string, HeldRecord[]>> {
    const marked = await this.held
      .find({ digest_id: mongoose.trusted({ $ne: null }) })
      .limit(CLAIM_BATCH)
      .lean();
    const digests = new Map<string, HeldRecord[]>();
    for (const h of marked) digests.set(h.digest_id!, [...(digests.get(h.digest_id!) ?? []), h]);
    return digests;
  }

  /** A digest was queued (or its endpoint is gone): its held deliveries go. */
  async release(digestId: string): Promise<void> {
    await this.held.deleteMany({ digest_id: digestId });
  }

  /** Each account's time zone for digests and quiet hours; `fallback` (APP_TIMEZONE) where it set none. */
  async zonesOf(userIds: readonly Types.ObjectId[], fallback: string): Promise<Map<string, string>> {
    const users = await userModel(this.conn)
      .find({ _id: mongoose.trusted({ $in: [...userIds] }) })
      .select({ time_zone: 1 })
      .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
      .lean();
    return new Map(users.map((u) => [u._id.toHexString(), u.time_zone ?? fallback]));
  }
}
