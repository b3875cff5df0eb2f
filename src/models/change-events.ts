import type mongoose from 'mongoose';
import type { Connection, Schema } from 'mongoose';
import type { ChangeTopic } from '../db/change-notices.js';

type Listener = (topic: ChangeTopic) => Promise<void>;

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
// post hook; one that matched nothing still tells (harmless: a cache is emptied for nothing).
const QUERY_WRITES = /^(updateOne|updateMany|replaceOne|deleteOne|deleteMany|findOneAndUpdate|findOneAndReplace|findOneAndDelete)$/;

/**
 * A schema plugin: after every write through mongoose, the listeners of the model's connection
 * hear `topic`. The models know nothing of who listens; the context forwards it to the other
 * processes (src/db/change-notices.ts). Writes that bypass mongoose (the driver's collection
 * methods) tell nobody, so nothing in the product writes these collections that way.
 */
export function emitChanges(topic: ChangeTopic) {
  return (schema: Schema): void => {
    schema.post('save', function () {
      return tell((this.constructor as mongoose.Model<unknown>).db, topic);
    });
    schema.post(QUERY_WRITES, { query: true, document: false }, function (this: mongoose.Query<unknown, unknown>) {
      return tell(this.model.db, topic);
    });
    schema.post(['updateOne', 'deleteOne'], { document: true, query: false }, function (this: mongoose.Document) {
      return tell((this.constructor as mongoose.Model<unknown>).db, topic);
    });
    schema.post('insertMany', function (this: mongoose.Model<unknown>) {
      return tell(this.db, topic);
    });
    schema.post('bulkWrite', function (this: mongoose.Model<unknown>) {
      return tell(this.db, topic);
    });
  };
}

async function tell(conn: Connection | undefined, topic: ChangeTopic): Promise<void> {
  const set = conn && listeners.get(conn);
  if (set?.size) await Promise.all([...set].map((listener) => listener(topic)));
}
