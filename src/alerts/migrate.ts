import mongoose, { type Connection, type Types } from 'mongoose';
import { alertModel, ALERT_PER_PRODUCT_INDEX } from '../models/alert.js';
import { accountCounterModel } from '../models/account-counter.js';
import type { Logger } from '../logger.js';

interface DuplicateGroup {
  _id: { user_id: Types.ObjectId };
  ids: Types.ObjectId[];
}

/**
 * Makes the alerts fit their unique (user_id, country, asin, kind) index before it is built:
 * alerts stored before it could repeat a product and kind, and the index build would fail on them
 * (and with it the start). Of each group of duplicates the newest stays (the account's latest
 * threshold and URL, which is what posting it again now does) and the others are deleted; their
 * queued deliveries find them gone and stop. Runs only while the index is missing, so a start
 * after the first costs one listIndexes. Answers how many alerts it deleted.
 */
export async function dedupeAlertsForIndex(conn: Connection, logger: Logger): Promise<number> {
  const alerts = alertModel(conn);
  const indexes = await alerts.collection.indexes().catch(() => []);
  if (indexes.length === 0 || indexes.some((i) => i.name === ALERT_PER_PRODUCT_INDEX)) return 0;
  const groups = await alerts.aggregate<DuplicateGroup>([
    { $sort: { created_at: -1, _id: -1 } },
    { $group: { _id: { user_id: '$user_id', country: '$country', asin: '$asin', kind: '$kind' }, ids: { $push: '$_id' } } },
    { $match: { 'ids.1': { $exists: true } } },
  ]);
  let deleted = 0;
  for (const g of groups) {
    const extra = g.ids.slice(1);
    const res = await alerts.deleteMany({ _id: mongoose.trusted({ $in: extra }) });
    deleted += res.deletedCount;
    // A counter seeded before this ran counted them.
    await accountCounterModel(conn).updateOne(
      { _id: g._id.user_id, alerts: mongoose.trusted({ $gte: res.deletedCount }) },
      { $inc: { alerts: -res.deletedCount } },
    );
  }
  if (deleted > 0) logger.warn({ deleted }, 'alerts repeating an account’s product and kind were deleted (the newest of each stays)');
  return deleted;
}
