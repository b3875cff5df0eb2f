import mongoose from 'mongoose';
import type { Connection, Schema } from 'mongoose';
import type { Change, ChangeTopic } from '../db/change-notices.js';

type Listener = (change: Change) => Promise<void>;

const listeners = new WeakMap<Connection, Set<Listener>>();

/**
 * Calls `listener` after every write through mongoose to a collection of `emitChanges`, on `conn`.
 * The write's caller goes on only once every listener has settled, so a change told to other
 * processes is on its way before the writer answers anyone.
 */
export function onWrites(conn: Connection, listener: Listener): () => void {
  let set = listeners.get(conn);
  if (!set) listeners.set(conn, (set = new Set()));
  set.add(listener);
  return () => set.delete(listener);
}

// Every write mongoose can make: document, query and model middleware. A write that fails runs no
// post hook; one that matched nothing still tells (harmless: a cache drops something for nothing).
const QUERY_WRITES = /^(updateOne|updateMany|replaceOne|deleteOne|deleteMany|findOneAndUpdate|findOneAndReplace|findOneAndDelete)$/;
const UPDATES = new Set(['updateOne', 'updateMany', 'findOneAndUpdate']);

/** Where a document's save hook leaves what its pre hook saw (mongoose resets it by the post hook). */
const SAVED_FIELDS = 'changeEvents.fields';

function idText(v: unknown): string | undefined {
  if (v instanceof mongoose.Types.ObjectId) return v.toHexString();
  return typeof v === 'string' && /^[0-9a-f]{24}$/.test(v) ? v : undefined;
}

/** The ids a filter names by `_id` (one, or `$in` a list), or undefined when it selects otherwise. */
function idsOfFilter(filter: Record<string, unknown>): string[] | undefined {
  const id: unknown = filter._id;
  const one = idText(id);
  if (one) return [one];
  const list = id && typeof id === 'object' && Object.keys(id).length === 1 ? (id as { $in?: unknown }).$in : undefined;
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const ids = list.map(idText);
  return ids.every((x) => x !== undefined) ? ids : undefined;
}

/** The top-level fields an update document sets or removes; undefined for pipelines and upserts. */
function fieldsOfUpdate(update: unknown): string[] | undefined {
  if (!update || typeof update !== 'object' || Array.isArray(update)) return undefined;
  const fields = new Set<string>();
  for (const [key, value] of Object.entries(update)) {
    if (key === '$setOnInsert') return undefined;
    const paths = key.startsWith('$') ? (value && typeof value === 'object' ? Object.keys(value) : []) : [key];
    for (const path of paths) fields.add(path.split('.')[0]!);
  }
  return [...fields];
}

/** A query write's change: its documents when its filter (or its answer) names them. */
function queryChange(topic: ChangeTopic, query: mongoose.Query<unknown, unknown>, res: unknown): Change {
  const op = (query as unknown as { op?: string }).op ?? '';
  let ids = idsOfFilter(query.getFilter());
  const found = res && typeof res === 'object' ? idText((res as { _id?: unknown })._id) : undefined;
  if (!ids && found && op.startsWith('findOneAnd')) ids = [found];
  if (!ids) return { topic };
  const fields = UPDATES.has(op) && !query.getOptions().upsert ? fieldsOfUpdate(query.getUpdate()) : undefined;
  return fields ? { topic, ids, fields } : { topic, ids };
}

/**
 * A schema plugin: after every write through mongoose, the listeners of the model's connection
 * hear what changed in `topic` (which documents, which fields, as far as the write tells). The models
 * know nothing of who listens; the context forwards it to the other processes
 * (src/db/change-notices.ts). Writes that bypass mongoose (the driver's collection methods) tell
 * nobody, so nothing in the product writes these collections that way.
 */
export function emitChanges(topic: ChangeTopic) {
  return (schema: Schema): void => {
    schema.pre('save', function (this: mongoose.Document) {
      this.$locals[SAVED_FIELDS] = this.isNew ? undefined : [...new Set(this.modifiedPaths().map((p) => p.split('.')[0]!))];
    });
    schema.post('save', function (this: mongoose.Document) {
      const ids = [String(this._id)];
      const fields = this.$locals[SAVED_FIELDS] as string[] | undefined;
      return tell((this.constructor as mongoose.Model<unknown>).db, fields ? { topic, ids, fields } : { topic, ids });
    });
    schema.post(QUERY_WRITES, { query: true, document: false }, function (this: mongoose.Query<unknown, unknown>, res: unknown) {
      return tell(this.model.db, queryChange(topic, this, res));
    });
    schema.post(['updateOne', 'deleteOne'], { document: true, query: false }, function (this: mongoose.Document) {
      return tell((this.constructor as mongoose.Model<unknown>).db, { topic, ids: [String(this._id)] });
    });
    schema.post('insertMany', function (this: mongoose.Model<unknown>, docs: unknown) {
      const ids = Array.isArray(docs) ? docs.map((d: { _id?: unknown }) => idText(d._id)) : [];
      const named = ids.length > 0 && ids.every((x) => x !== undefined);
      return tell(this.db, named ? { topic, ids } : { topic });
    });
    schema.post('bulkWrite', function (this: mongoose.Model<unknown>) {
      return tell(this.db, { topic });
    });
  };
}

async function tell(conn: Connection | undefined, change: Change): Promise<void> {
  const set = conn && listeners.get(conn);
  if (set?.size) await Promise.all([...set].map((listener) => listener(change)));
}
