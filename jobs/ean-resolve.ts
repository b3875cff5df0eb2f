import { Types } from 'mongoose';
import { z } from 'zod';
import { countrySchema, isValidEan13 } from '../src/core/identifiers.js';
import { writeFoundItems } from '../src/catalog/writes.js';
import { OBJECT_ID_RE } from '../src/db/mongo.js';
import { eanImportModel } from '../src/models/ean-import.js';
import { MAX_PAGE } from '../src/upstream/port.js';
import { defineJob } from './kind.js';
import { DEFAULT_RETRY } from '../config/retry.js';
import { fairSchema } from '../src/fairness/fair-classes.js';
import { enqueuePage, recordCountryAnswer } from '../src/watch/ean-imports.js';

/** An EAN import's resolve job: the import itself, from start to end, is src/watch/ean-imports.ts. */

const objectId = z.string().regex(OBJECT_ID_RE);

const resolvePayload = z.object({
  country: countrySchema,
  importId: objectId,
  userId: objectId,
  ean: z.string().refine(isValidEan13),
  page: z.number().int().min(1).max(MAX_PAGE).default(1),
  fair: fairSchema.optional(),
});

/**
 * One search page of the import's code in the job's country. Search answers carry the same item
 * data as getItems, so the products are written as found; their ASINs join the importing user's
 * watchlist at priority 0 (which schedules their next refresh).
 *
 * Progress is written before the next page's job is added: a crash between the two is healed by
 * this job's retry (or the scheduler's sweep), which finds the next page recorded and adds its job
 * under the same id, without spending a call on a page already read.
 */
export const eanResolveJob = defineJob({
  name: 'ean.resolve',
  payload: resolvePayload,
  cls: 'import',
  priority: 1,
  retry: DEFAULT_RETRY,
  async run(ctx, data, run): Promise<{ page: number; asins: string[]; last: boolean }> {
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

    const result = await run.upstream.findByCode(data.ean, data.page);
    const found = result.items.map((i) => i.asin);
    await writeFoundItems(ctx.mongo, ctx.config, data.country, result.items, {
      onChanges: (changes, written) => ctx.deliveries.enqueueFor(changes, written).then(() => undefined),
    });
    if (found.length) await ctx.watches.watchFoundAsins(new Types.ObjectId(data.userId), found);
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
  },
  /** The country's slot says until when it waits; its next page clears it. */
  async whenDaySpent(ctx, data, until) {
    await eanImportModel(ctx.mongo).updateOne(
      { _id: new Types.ObjectId(data.importId), 'countries.country': data.country },
      { $set: { 'countries.$.waiting_until': until } },
    );
  },
  /** The country failed for good: it answers `failed`, keeping what earlier pages found. */
  async onFinalFailure(ctx, data, err) {
    await recordCountryAnswer(ctx.mongo, data.importId, data.country, 'failed', null, err.message);
  },
});
