import mongoose, { Schema, type Connection, type Model, type Types } from 'mongoose';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import type { Country } from '../../core/identifiers.js';
import { isDuplicateKey, withTimeout } from '../../db/mongo.js';

/**
 * How many of the latest events a counter remembers by key: a change seen again (a retried batch,
 * a forced update racing a planned one) within that many newer events gets the number it had.
 */
export const REMEMBERED_EVENTS = 64;

/**
 * The event counter of one alert on one product: `seq` is the number of the latest event, and
 * `recent` the keys of the latest events, oldest first, the last being `seq`'s (each increment
 * pushes exactly one key, so the key at index i has number seq - (recent.length - 1 - i)).
 */
export interface AlertSequenceFields {
  /** `<alert id>.<country>.<asin>`: an alert's counters share a prefix, so deleting them uses the _id index. */
  _id: string;
  alert_id: Types.ObjectId;
  country: Country;
  asin: string;
  seq: number;
  recent: string[];
}

const alertSequenceSchema = new Schema<AlertSequenceFields>(
  {
    _id: { type: String, required: true },
    alert_id: { type: Schema.Types.ObjectId, required: true },
    country: { type: String, required: true },
    asin: { type: String, required: true },
    seq: { type: Number, required: true },
    recent: { type: [String], default: [] },
  },
  { collection: 'alert_sequences', versionKey: false, strict: 'throw' },
);

type AlertSequenceModel = Model<AlertSequenceFields>;

export function alertSequenceModel(conn: Connection): AlertSequenceModel {
  return (
    (conn.models.AlertSequence as AlertSequenceModel | undefined) ?? conn.model<AlertSequenceFields>('AlertSequence', alertSequenceSchema)
  );
}

/** One event of an alert on a product: `key` names the change (ProductChange.key). */
export interface SequencedEvent {
  readonly alertId: Types.ObjectId;
  readonly country: Country;
  readonly asin: string;
  readonly key: string;
}

const counterId = (e: Pick<SequencedEvent, 'alertId' | 'country' | 'asin'>) => `${e.alertId.toHexString()}.${e.country}.${e.asin}`;

/** The number a remembered key has in a counter; null when it is not (or no longer) remembered. */
function numberOf(doc: Pick<AlertSequenceFields, 'seq' | 'recent'>, key: string): number | null {
  const i = doc.recent.lastIndexOf(key);
  return i < 0 ? null : doc.seq - (doc.recent.length - 1 - i);
}

/**
 * The deliveries' sequence numbers: per alert and product, 1 for its first event, then one more for
 * each event, assigned once when the event is queued and kept in the delivery's content, so every
 * retry and replay sends the same number. Durable in MongoDB (`alert_sequences`, one document per
 * alert and product, changed by one atomic update), and idempotent per change key: the same change
 * queued twice gets the same number, not a new one.
 */
export class AlertSequences {
  constructor(private readonly conn: Connection) {}

  private get counters() {
    return alertSequenceModel(this.conn);
  }

  /**
   * The events' numbers, in the order given: events of one counter are numbered one after the
   * other in that order, different counters at once.
   */
  async assign(events: readonly SequencedEvent[]): Promise<number[]> {
    const numbers = new Array<number>(events.length);
    const byCounter = new Map<string, number[]>();
    events.forEach((e, i) => byCounter.set(counterId(e), [...(byCounter.get(counterId(e)) ?? []), i]));
    await Promise.all(
      [...byCounter.values()].map(async (indexes) => {
        for (const i of indexes) numbers[i] = await this.next(events[i]!);
      }),
    );
    return numbers;
  }

  /**
   * One event's number. The update increments only when the key is not among the remembered ones;
   * when it is, the filter matches nothing and the upsert meets the _id index (a duplicate key),
   * and the number is read back. A duplicate key from two first events racing to insert the
   * counter is the same error: the loop's next turn then finds the document.
   */
  private async next(e: SequencedEvent): Promise<number> {
    const _id = counterId(e);
    for (let turn = 0; ; turn++) {
      try {
        const doc = await withTimeout(
          this.counters
            .findOneAndUpdate(
              { _id, recent: mongoose.trusted({ $ne: e.key }) },
              {
                $setOnInsert: { alert_id: e.alertId, country: e.country, asin: e.asin },
                $inc: { seq: 1 },
                $push: { recent: { $each: [e.key], $slice: -REMEMBERED_EVENTS } },
              },
              { upsert: true, returnDocument: 'after' },
            )
            .lean()
            .exec(),
          DELIVERY_DB_TIMEOUT_MS,
          'alert sequence',
        );
        return doc!.seq;
      } catch (err) {
        if (!isDuplicateKey(err) || turn >= 2) throw err;
        const doc = await this.counters.findById(_id).maxTimeMS(DELIVERY_DB_TIMEOUT_MS).lean();
        const n = doc ? numberOf(doc, e.key) : null;
        if (n !== null) return n;
      }
    }
  }

  /** Deletes an alert's counters (a deleted alert's id is never used again). */
  async removeForAlert(alertId: Types.ObjectId): Promise<void> {
    await this.counters.deleteMany({ _id: mongoose.trusted({ $regex: `^${alertId.toHexString()}\\.` }) });
  }
}
