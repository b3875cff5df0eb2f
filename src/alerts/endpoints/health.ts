import mongoose, { type Connection, type Types } from 'mongoose';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import { endpointModel } from '../../models/endpoint.js';
import { withTimeout } from '../../db/mongo.js';
import type { AccountEvents } from './events.js';
import { addressOf } from './target.js';
import { channelOf, openedParts, SECRETS, shownUrl, UNSEALABLE_REASON, type DeliveryEndpoint, type Endpoint } from './endpoint.js';

const GONE_REASON = 'the receiver answered 410 Gone';

/** "5d", "12h", "30m", "45s": how ENDPOINT_DISABLE_AFTER reads back in a reason. */
function spanText(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * The endpoints' delivery health, as attempts read and write it: what reaching one takes, its
 * failure span, disabling (with the account's event), and its count of delivery records. Every
 * call has a deadline (maxTimeMS on reads, DELIVERY_DB_TIMEOUT_MS on writes), so a stalled MongoDB
 * fails the attempt instead of holding the worker's slot.
 */
export class EndpointHealth {
  constructor(
    private readonly conn: Connection,
    private readonly appKey: Buffer,
    private readonly events: AccountEvents,
  ) {}

  private get endpoints() {
    return endpointModel(this.conn);
  }

  /**
   * The endpoint with its target and every secret a delivery signs with (its own first); null when
   * it is gone. One whose sealed parts do not open is disabled (with its event) and answered
   * `unusable`: nothing is sent to it until its alert is posted again.
   */
  async forDelivery(id: Types.ObjectId): Promise<DeliveryEndpoint | null> {
    const doc = await this.endpoints.findById(id).select(SECRETS).maxTimeMS(DELIVERY_DB_TIMEOUT_MS).lean();
    if (!doc) return null;
    const { secret_sealed: _s, legacy_secrets_sealed: _l, target_sealed: _t, ...endpoint } = doc;
    const channel = channelOf(endpoint);
    const opened = openedParts(this.appKey, doc);
    const target = channel === 'webhook' ? endpoint.url : channel === 'email' ? addressOf(endpoint.url) : (opened?.target ?? null);
    if (opened && target !== null) return { endpoint, channel, target, secrets: opened.secrets, unusable: null };
    const now = new Date();
    const disabled = (await this.disableWhere({}, endpoint, UNSEALABLE_REASON, now))
      ? { ...endpoint, disabled_at: now, disabled_reason: UNSEALABLE_REASON }
      : endpoint;
    return { endpoint: disabled, channel, target: '', secrets: [], unusable: UNSEALABLE_REASON };
  }

  /** A 2xx: the endpoint is healthy again. */
  async recordSuccess(id: Types.ObjectId, now: Date): Promise<void> {
    await this.write(this.endpoints.updateOne({ _id: id }, { $set: { failing_since: null, last_success_at: now } }).exec());
  }

  /**
   * A failed attempt. The first since the last success starts the failure span; one when the span
   * is older than `disableAfterMs` disables the endpoint, records the event, and answers the reason.
   */
  async recordFailure(endpoint: Endpoint, now: Date, disableAfterMs: number): Promise<string | null> {
    const reason = `every delivery failed for longer than ${spanText(disableAfterMs)} (ENDPOINT_DISABLE_AFTER)`;
    const cutoff = new Date(now.getTime() - disableAfterMs);
    // A null failing_since never matches $lte: only an endpoint failing since before the cutoff.
    const disabled = await this.disableWhere({ failing_since: mongoose.trusted({ $lte: cutoff }) }, endpoint, reason, now);
    if (disabled) return reason;
    await this.write(this.endpoints.updateOne({ _id: endpoint._id, failing_since: null }, { $set: { failing_since: now } }).exec());
    return null;
  }

  /** A 410 Gone, or a chat service's "no such webhook": disabled at once (with its event). */
  async recordGone(endpoint: Endpoint, now: Date, reason = GONE_REASON): Promise<string> {
    await this.disableWhere({}, endpoint, reason, now);
    return reason;
  }

  /** Adds `n` new delivery records to the endpoint's count; answers the count. */
  async addRecords(id: Types.ObjectId, n: number): Promise<number> {
    const doc = await withTimeout(
      this.endpoints
        .findOneAndUpdate({ _id: id }, { $inc: { record_count: n } }, { returnDocument: 'after', projection: { record_count: 1 } })
        .lean()
        .exec(),
      DELIVERY_DB_TIMEOUT_MS,
      'endpoint record count',
    );
    return doc?.record_count ?? 0;
  }

  async setRecordCount(id: Types.ObjectId, n: number): Promise<void> {
    await this.write(this.endpoints.updateOne({ _id: id }, { $set: { record_count: n } }).exec());
  }

  /** Disables an endpoint still enabled that matches `extra`; records the event when this call did it. */
  private async disableWhere(extra: Record<string, unknown>, endpoint: Endpoint, reason: string, now: Date): Promise<boolean> {
    const res = await this.write(
      this.endpoints
        .updateOne({ _id: endpoint._id, disabled_at: null, ...extra }, { $set: { disabled_at: now, disabled_reason: reason } })
        .exec(),
    );
    if (res.modifiedCount !== 1) return false;
    await this.events.record({
      user_id: endpoint.user_id,
      type: 'endpoint.disabled',
      endpoint_id: endpoint._id,
      url: shownUrl(endpoint),
      reason,
      at: now,
    });
    return true;
  }

  private write<T>(p: Promise<T>): Promise<T> {
    return withTimeout(p, DELIVERY_DB_TIMEOUT_MS, 'endpoint write');
  }
}
