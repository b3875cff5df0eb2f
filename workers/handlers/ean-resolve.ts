import { Types } from 'mongoose';
import type { JobContext } from '../context.js';
import type { JobPayload } from '../../jobs/registry.js';
import { eanImportModel, type CountryImportStatus } from '../../src/models/ean-import.js';
import { WatchService } from '../../src/watch/service.js';
import { writeFoundItems } from '../catalog-writes.js';
import type { Country } from '../../src/catalog/identifiers.js';

/**
 * Records one country's answer on the import, then settles the import once every country has
 * answered: done when any found an ASIN, failed when none found one and some failed, else not
 * found. Each country writes its own slot, so two countries finishing at once cannot lose a write;
 * whichever settles last sees all answers.
 */
export async function recordCountryAnswer(ctx: Pick<JobContext, 'mongo'>, importId: string, country: Country, status: CountryImportStatus, asins: readonly string[], error: string | null = null): Promise<void> {
  const imports = eanImportModel(ctx.mongo);
  const id = new Types.ObjectId(importId);
  await imports.updateOne(
    { _id: id, 'countries.country': country },
    { $set: { 'countries.$.status': status, 'countries.$.asins': [...asins], 'countries.$.error': error } },
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
  await imports.updateOne({ _id: id }, { $set: { status: found ? 'done' : failed ? 'failed' : 'not_found' }, $unset: { pending_key: 1 } });
}

/**
 * Resolves the import's EAN in the job's country: writes the products it finds (search answers
 * carry the same item data as getItems), adds their ASINs to the importing user's watchlist at
 * priority 0 (which schedules their next refresh), and records the country's answer.
 */
export async function resolveEan(ctx: JobContext, data: JobPayload<'ean.resolve'>): Promise<{ asins: string[] }> {
  const imports = eanImportModel(ctx.mongo);
  const current = await imports.findById(data.importId).select({ countries: 1 }).lean();
  // The import was deleted (its enqueue failed half-way), or this country already answered.
  if (!current || current.countries.find((c) => c.country === data.country)?.status !== 'queued') return { asins: [] };

  const result = await ctx.upstream(data.country).findByCode(data.ean);
  const asins = result.items.map((i) => i.asin);
  await writeFoundItems(ctx.mongo, data.country, result.items);
  if (asins.length) await new WatchService(ctx.mongo, ctx.config, ctx.jobs).watchFoundAsins(new Types.ObjectId(data.userId), asins);
  await recordCountryAnswer(ctx, data.importId, data.country, asins.length ? 'done' : 'not_found', asins);
  return { asins };
}
