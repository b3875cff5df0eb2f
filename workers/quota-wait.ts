import mongoose, { Types } from 'mongoose';
import type { Job } from 'bullmq';
import type { JobContext } from './context.js';
import { eanImportModel } from '../src/models/ean-import.js';
import { watchModel } from '../src/models/watch.js';
import type { Country } from '../src/catalog/identifiers.js';

/**
 * Says on the import or the watch entries that their work waits for the next quota day, so that a
 * client reading them learns why nothing moves and until when. Cleared when the work goes on (the
 * next page's handler writes its progress; a crawl's last page records the crawl).
 */
export async function noteQuotaWait(ctx: JobContext, job: Job, until: number): Promise<void> {
  const data = job.data as { country?: string; importId?: string; nodeId?: string };
  const at = new Date(until);
  if (job.name === 'ean.resolve' && data.importId && Types.ObjectId.isValid(data.importId)) {
    await eanImportModel(ctx.mongo).updateOne(
      { _id: new Types.ObjectId(data.importId), 'countries.country': data.country as Country },
      { $set: { 'countries.$.waiting_until': at } },
    );
  } else if (job.name === 'browse.crawl' && data.nodeId) {
    await watchModel(ctx.mongo).updateMany({ kind: 'browse', key: data.nodeId, crawl_waiting_until: mongoose.trusted({ $ne: at }) }, { $set: { crawl_waiting_until: at } });
  }
}
