import { Schema, type Connection, type Model } from 'mongoose';

/**
 * Upstream calls per country and quota day (QUOTA_DAY_TZ), a copy of the Redis counter that survives Redis: after a
 * flush or a restart without AOF, the planner would otherwise believe nothing was spent today and
 * spend the day's quota again. One document per country and day (`_id` `CC:YYYY-MM-DD`), so a
 * write is one upsert by primary key.
 */
export interface QuotaUsageFields {
  _id: string;
  country: string;
  day: string;
  calls: number;
  /** Of them, forced updates' calls, EAN imports' and browse crawls': each class has a share of the day. */
  od_calls: number;
  import_calls: number;
  crawl_calls: number;
}

export const quotaUsageSchema = new Schema<QuotaUsageFields>(
  {
    _id: { type: String, required: true },
    country: { type: String, required: true },
    day: { type: String, required: true },
    calls: { type: Number, default: 0 },
    od_calls: { type: Number, default: 0 },
    import_calls: { type: Number, default: 0 },
    crawl_calls: { type: Number, default: 0 },
  },
  { collection: 'quota_usage', versionKey: false, strict: 'throw' },
);

export type QuotaUsageModel = Model<QuotaUsageFields>;

export function quotaUsageModel(conn: Connection): QuotaUsageModel {
  return (conn.models.QuotaUsage as QuotaUsageModel | undefined) ?? conn.model<QuotaUsageFields>('QuotaUsage', quotaUsageSchema);
}
