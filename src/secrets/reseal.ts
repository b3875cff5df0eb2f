/**
 * The start-up upgrade of sealed secrets: every value still sealed the old way (`v1.`, under APP_KEY
 * itself, bound to nothing) is opened and sealed again the current way (src/secrets/seal.ts), bound
 * to its record and field. Serving roles run it before they serve, as they build indexes.
 *
 * It walks each sealed field in _id order, a batch at a time, and writes a value only where it is
 * still the one it read (compare and set), so several processes starting at once, a run after a
 * finished one, and live writes meanwhile (a rotated token, a new endpoint) are all safe: a value
 * someone else wrote first is left alone, and once none is left a run costs one query a field.
 * A value that does not open under this APP_KEY stays as it is, counted and logged; whatever holds
 * it is found unusable when it is used, as a moved value would be.
 */
import mongoose, { type AnyBulkWriteOperation, type Connection, type Model, type Types } from 'mongoose';
import type { Logger } from '../logger.js';
import { isCurrentSeal, LEGACY_SEAL_PREFIX, openSealed, seal } from './seal.js';
import { placeOf, SEALED_FIELDS, type SealedField } from './fields.js';
import { SealedSecretError } from '../core/errors.js';

/** Values re-sealed per write: bounds a batch's memory and the time any one write takes. */
export const RESEAL_BATCH = 200;

export interface ResealResult {
  /** Records whose values this run sealed again the current way (one another process wrote first is not counted). */
  resealed: number;
  /** Old values that did not open under this APP_KEY (left as they are). */
  unopenable: number;
}

type Stored = { _id: Types.ObjectId } & Record<string, unknown>;

/** The value sealed again, or null when it does not open; current values are kept as they are. */
function resealed(appKey: Buffer, f: SealedField, id: Types.ObjectId, value: string): string | null {
  if (isCurrentSeal(value)) return value;
  const place = placeOf(f, id);
  try {
    return seal(appKey, f.purpose, place, openSealed(appKey, f.purpose, place, value));
  } catch (err) {
    if (err instanceof SealedSecretError) return null;
    throw err;
  }
}

function modelOf(conn: Connection, collection: string): Model<Stored> {
  const model = Object.values(conn.models).find((m) => m.collection.collectionName === collection);
  if (!model) throw new Error(`no model is registered for the collection ${collection}`);
  return model as unknown as Model<Stored>;
}

async function resealField(conn: Connection, appKey: Buffer, f: SealedField, batch: number, out: ResealResult): Promise<void> {
  const model = modelOf(conn, f.collection);
  const old = mongoose.trusted({ $regex: `^${LEGACY_SEAL_PREFIX.replace('.', '\\.')}` });
  let after: Types.ObjectId | null = null;
  for (;;) {
    const filter: Record<string, unknown> = { [f.field]: old, ...(after ? { _id: mongoose.trusted({ $gt: after }) } : {}) };
    const docs = await model
      .find(filter)
      .select({ [f.field]: 1 })
      .sort({ _id: 1 })
      .limit(batch)
      .lean<Stored[]>();
    if (docs.length === 0) return;
    after = docs[docs.length - 1]!._id;
    const ops: AnyBulkWriteOperation<Stored>[] = [];
    for (const doc of docs) {
      const value = doc[f.field];
      const values = (f.many ? value : [value]) as string[];
      const next = values.map((v) => resealed(appKey, f, doc._id, v) ?? v);
      out.unopenable += next.filter((v) => !isCurrentSeal(v)).length;
      if (next.every((v, i) => v === values[i])) continue;
      ops.push({
        updateOne: { filter: { _id: doc._id, [f.field]: value }, update: { $set: { [f.field]: f.many ? next : next[0] } } },
      });
    }
    if (ops.length > 0) out.resealed += (await model.bulkWrite(ops, { ordered: false, timestamps: false })).modifiedCount;
    if (docs.length < batch) return;
  }
}

/** Seals every old-way value of every sealed field anew; answers what it did. */
export async function resealStoredSecrets(conn: Connection, appKey: Buffer, logger: Logger, batch = RESEAL_BATCH): Promise<ResealResult> {
  const out: ResealResult = { resealed: 0, unopenable: 0 };
  for (const f of Object.values(SEALED_FIELDS)) await resealField(conn, appKey, f, batch, out);
  if (out.resealed > 0) logger.info(out, 'sealed secrets of before were sealed again, bound to their records');
  if (out.unopenable > 0) {
    logger.warn(out, 'some sealed secrets do not open under this APP_KEY and were left as they are (was APP_KEY changed?)');
  }
  return out;
}
