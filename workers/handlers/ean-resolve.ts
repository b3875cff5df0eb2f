import { Types } from 'mongoose';
import type { JobContext } from '../context.js';
import { eanResolveJobId, type JobPayload } from '../../jobs/registry.js';
import { eanImportModel } from '../../src/models/ean-import.js';
import { recordCountryAnswer } from '../../src/watch/ean-imports.js';
import { WatchService } from '../../src/watch/service.js';
import { writeFoundItems } from '../catalog-writes.js';

async function enqueuePage(ctx: JobContext, data: JobPayload<'ean.resolve'>, page: number): Promise<void> {
  await ctx.jobs.add('ean.resolve', { ...data, page }, { jobId: eanResolveJobId(data.importId, data.country, page) });
}

/**
 * One search page of the import's EAN in the job's country: writes the products it lists (search
 * answers carry the same item data as getItems) and adds their ASINs to the importing user's
 * watchlist at priority 0 (which schedules their next refresh). While the search has more pages,
 * records the progress on the import and enqueues the next page; on the last, records the
 * country's answer.
 *
 * Progress is written before the next page's job is added: a crash between the two is healed by
 * this job's retry (or the scheduler's sweep), which finds the next page recorded and adds its job
 * under the same id, without spending a call on a page already read.
 */
export async function resolveEan(ctx: JobContext, data: JobPayload<'ean.resolve'>): Promise<{ page: number; asins: string[]; last: boolean }> {
  const imports = eanImportModel(ctx.mongo);
  const current = await imports.findById(data.importId).select({ countries: 1 }).lean();
  const slot = current?.countries.find((c) => c.country === data.country);
  // The import was deleted (its enqueue failed half-way), or this country already answered.
  if (!slot || slot.status !== 'queued') return { page: data.page, asins: [], last: true };
  const next = slot.page ?? 1;
  if (data.page !== next) {
    if (data.page < next) await enqueuePage(ctx, data, next);
    return { page: data.page, asins: [], last: false };
  }

  const result = await ctx.upstream(data.country, 'ean.resolve').findByCode(data.ean, data.page);
  const found = result.items.map((i) => i.asin);
  await writeFoundItems(ctx.mongo, data.country, result.items);
  if (found.length) await new WatchService(ctx.mongo, ctx.config, ctx.jobs).watchFoundAsins(new Types.ObjectId(data.userId), found);
  const asins = [...new Set([...slot.asins, ...found])];
  if (result.hasMore) {
    await imports.updateOne(
      { _id: new Types.ObjectId(data.importId), 'countries.country': data.country },
      // While this country's slot is open the import cannot have ended, so it is resolving.
      { $set: { status: 'resolving', 'countries.$.page': data.page + 1, 'countries.$.asins': asins, 'countries.$.waiting_until': null } },
    );
    await enqueuePage(ctx, data, data.page + 1);
    return { page: data.page, asins: found, last: false };
  }
  await recordCountryAnswer(ctx.mongo, data.importId, data.country, asins.length ? 'done' : 'not_found', asins);
  return { page: data.page, asins, last: true };
}
