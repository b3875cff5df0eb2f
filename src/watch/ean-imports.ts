import { Types, type Connection } from 'mongoose';
import type { Country } from '../catalog/identifiers.js';
import { eanImportModel, type CountryImportStatus } from '../models/ean-import.js';

/**
 * Records one country's answer on the import, then settles the import once every country has
 * answered: done when any found an ASIN, failed when none found one and some failed, else not
 * found. Each country writes its own slot, so two countries finishing at once cannot lose a write;
 * whichever settles last sees all answers. `asins` null keeps what earlier pages found (a failure).
 */
export async function recordCountryAnswer(mongo: Connection, importId: string, country: Country, status: CountryImportStatus, asins: readonly string[] | null, error: string | null = null): Promise<void> {
  const imports = eanImportModel(mongo);
  const id = new Types.ObjectId(importId);
  await imports.updateOne(
    { _id: id, 'countries.country': country },
    { $set: { 'countries.$.status': status, 'countries.$.error': error, 'countries.$.waiting_until': null, ...(asins ? { 'countries.$.asins': [...asins] } : {}) } },
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

