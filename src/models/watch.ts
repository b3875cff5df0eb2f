import { Schema, type Connection, type HydratedDocument, type Model, type Types } from 'mongoose';

/**
 * A user's watchlist entry: an ASIN (with priority 0 or 1) or a browse node. One collection with a
 * `kind` and a `key` (the ASIN or the node id) so that one unique index stops duplicates of both.
 */
export interface WatchFields {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  kind: 'asin' | 'browse';
  key: string;
  priority: 0 | 1;
  /** Browse entries: when the last crawl finished and how many ASINs it found. */
  last_crawl_at: Date | null;
  last_crawl_count: number | null;
  /** Browse entries: set while the node's crawl waits for the next quota day (the day's quota is spent). */
  crawl_waiting_until?: Date | null;
  /**
   * Browse entries: when the node's next crawl is due (null: now). Planning a crawl moves it a lease
   * ahead, so a crawl under way is not planned twice; its last page sets it an interval ahead.
   */
  next_crawl_at?: Date | null;
  /** Where the entry came from: the API, or the EAN import that found the ASIN. */
  source: 'api' | 'ean';
  created_at: Date;
  updated_at: Date;
}

export const watchSchema = new Schema<WatchFields>(
  {
    user_id: { type: Schema.Types.ObjectId, required: true },
    kind: { type: String, enum: ['asin', 'browse'], required: true },
    key: { type: String, required: true },
    priority: { type: Number, enum: [0, 1], default: 0 },
    last_crawl_at: { type: Date, default: null },
    last_crawl_count: { type: Number, default: null },
    crawl_waiting_until: { type: Date, default: null },
    next_crawl_at: { type: Date, default: null },
    source: { type: String, enum: ['api', 'ean'], default: 'api' },
  },
  { collection: 'watches', versionKey: false, strict: 'throw', timestamps: { createdAt: 'created_at', updatedAt: 'updated_at' } },
);

watchSchema.index({ user_id: 1, kind: 1, key: 1 }, { unique: true });
// A user's list, newest first.
watchSchema.index({ user_id: 1, created_at: -1, _id: -1 });
// Effective priority of an ASIN: the highest among its watchers; and the crawl plan of browse nodes.
watchSchema.index({ kind: 1, key: 1, priority: -1 });
// The crawl plan: browse entries due, the longest due first, a bounded batch a pass.
watchSchema.index({ kind: 1, next_crawl_at: 1 });
// ACCOUNT_MAX_P1_WATCHES: counts an account's priority-1 entries from the index alone (the unique
// index would fetch every entry of the account to read its priority).
watchSchema.index({ user_id: 1, kind: 1, priority: 1 });

export type WatchModel = Model<WatchFields>;
export type WatchDoc = HydratedDocument<WatchFields>;

export function watchModel(conn: Connection): WatchModel {
  return (conn.models.Watch as WatchModel | undefined) ?? conn.model<WatchFields>('Watch', watchSchema);
}
