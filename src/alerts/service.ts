import mongoose, { Types, type Connection } from 'mongoose';
import type { Config } from '../../config/env.js';
import type { Country } from '../catalog/identifiers.js';
import { alertModel, type AlertFields, type AlertKind } from '../models/alert.js';
import { deliveryModel, type DeliveryFields, type DeliveryStatus } from '../models/delivery.js';
import { decryptToken, encryptToken } from '../users/token.js';
import { ValidationError, WebhookTargetRefusedError } from '../errors/index.js';
import { OBJECT_ID_RE } from '../db/mongo.js';
import { findPage, type Page, type PageRequest } from '../db/page.js';
import type { WatchService } from '../watch/service.js';
import { checkWebhookTarget } from './webhook-target.js';
import { generateWebhookSecret } from './send-webhook.js';

export type Alert = Omit<AlertFields, 'secret_sealed'>;

export interface NewAlert {
  readonly asin: string;
  readonly country: Country;
  readonly kind: AlertKind;
  readonly price: number | null;
  readonly percent: number | null;
  readonly webhookUrl: string;
}

const NEWEST_FIRST = { created_at: -1, _id: -1 } as const;

/** What an attempt of a delivery ended with, for its record. */
export interface AttemptRecord {
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly responseCode: number | null;
  readonly error: string | null;
}

/**
 * Alerts of accounts on products, and their deliveries' records. An account sees only its own
 * alerts: another's id answers as if it did not exist.
 */
export class AlertService {
  constructor(
    private readonly conn: Connection,
    private readonly config: Pick<Config, 'accounts' | 'alerts'>,
    private readonly appKey: Buffer,
    private readonly watches: WatchService,
  ) {}

  private get alerts() {
    return alertModel(this.conn);
  }

  private get deliveryRecords() {
    return deliveryModel(this.conn);
  }

  /**
   * Checks the account's cap and where the URL resolves, watches the ASIN if the account does not,
   * and stores the alert with a new signing secret, which only this answer carries.
   */
  async create(userId: Types.ObjectId, input: NewAlert): Promise<{ alert: Alert; secret: string }> {
    const { maxAlerts } = this.config.accounts;
    if (maxAlerts > 0 && (await this.alerts.countDocuments({ user_id: userId })) >= maxAlerts) {
      throw new ValidationError({ kind: [`You may hold at most ${maxAlerts} alerts (ACCOUNT_MAX_ALERTS).`] });
    }
    try {
      await checkWebhookTarget(input.webhookUrl, { allowPrivate: this.config.alerts.allowPrivate });
    } catch (err) {
      if (err instanceof WebhookTargetRefusedError) throw new ValidationError({ webhook_url: [err.message] });
      throw err;
    }
    await this.watches.ensureAsinWatched(userId, input.asin);
    const secret = generateWebhookSecret();
    const doc = await this.alerts.create({
      user_id: userId,
      asin: input.asin,
      country: input.country,
      kind: input.kind,
      price: input.price,
      percent: input.percent,
      webhook_url: input.webhookUrl,
      secret_sealed: encryptToken(secret, this.appKey),
      disabled_at: null,
      disabled_reason: null,
      last_delivery_at: null,
    });
    const { secret_sealed: _sealed, ...alert } = doc.toObject();
    return { alert, secret };
  }

  list(userId: Types.ObjectId, page: PageRequest): Promise<Page<Alert>> {
    return findPage(this.alerts, { user_id: userId }, NEWEST_FIRST, page);
  }

  /** The account's alert with this id; null for a malformed id, another account's, or none. */
  async find(userId: Types.ObjectId, id: string): Promise<Alert | null> {
    if (!OBJECT_ID_RE.test(id)) return null;
    return this.alerts.findOne({ _id: new Types.ObjectId(id), user_id: userId }).lean();
  }

  /** Deletes the alert and its deliveries' records; deliveries still queued find it gone and stop. */
  async remove(userId: Types.ObjectId, id: string): Promise<Alert | null> {
    if (!OBJECT_ID_RE.test(id)) return null;
    const removed = await this.alerts.findOneAndDelete({ _id: new Types.ObjectId(id), user_id: userId }).lean();
    if (removed) await this.deliveryRecords.deleteMany({ alert_id: removed._id });
    return removed;
  }

  /** The alert's deliveries, newest first; null when the account has no such alert. */
  async deliveries(userId: Types.ObjectId, id: string, page: PageRequest): Promise<Page<DeliveryFields> | null> {
    const alert = await this.find(userId, id);
    if (!alert) return null;
    return findPage(this.deliveryRecords, { alert_id: alert._id }, NEWEST_FIRST, page);
  }

  /** The active alerts on these products of a country (one query per batch that changed something). */
  activeOn(country: Country, asins: readonly string[]): Promise<Alert[]> {
    return this.alerts.find({ country, asin: mongoose.trusted({ $in: [...asins] }), disabled_at: null }).lean();
  }

  /** An alert still to deliver to, with its secret; null once deleted or disabled. */
  async forDelivery(alertId: string): Promise<{ alert: Alert; secret: string } | null> {
    if (!OBJECT_ID_RE.test(alertId)) return null;
    const doc = await this.alerts
      .findOne({ _id: new Types.ObjectId(alertId), disabled_at: null })
      .select('+secret_sealed')
      .lean();
    if (!doc) return null;
    const { secret_sealed, ...alert } = doc;
    return { alert, secret: decryptToken(secret_sealed, this.appKey) };
  }

  async disable(alertId: string, reason: string): Promise<void> {
    if (!OBJECT_ID_RE.test(alertId)) return;
    await this.alerts.updateOne({ _id: new Types.ObjectId(alertId) }, { $set: { disabled_at: new Date(), disabled_reason: reason } });
  }

  /** When the oldest delivery still waiting for an acknowledgement was queued; null when none waits. */
  async oldestPendingDelivery(): Promise<Date | null> {
    const oldest = await this.deliveryRecords.findOne({ status: 'pending' }).sort({ created_at: 1 }).select({ created_at: 1 }).lean();
    return oldest?.created_at ?? null;
  }

  /** A delivery's record as queued: made once, left as it is when the same change is seen again. */
  async recordQueued(deliveries: readonly { id: string; alert: Alert }[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.deliveryRecords.bulkWrite(
      deliveries.map((d) => ({
        updateOne: {
          filter: { _id: d.id },
          update: { $setOnInsert: { alert_id: d.alert._id, user_id: d.alert.user_id, status: 'pending' as const, attempts: 0 } },
          upsert: true,
        },
      })),
      { ordered: false },
    );
  }

  /** What an attempt got. A delivered one also stamps the alert's `last_delivery_at`. */
  async recordAttempt(id: string, alert: Alert, attempt: AttemptRecord): Promise<void> {
    const now = new Date();
    await this.deliveryRecords.updateOne(
      { _id: id },
      {
        $set: {
          status: attempt.status,
          attempts: attempt.attempts,
          response_code: attempt.responseCode,
          last_error: attempt.error,
          ...(attempt.status === 'delivered' ? { delivered_at: now } : {}),
        },
        $setOnInsert: { alert_id: alert._id, user_id: alert.user_id },
      },
      { upsert: true },
    );
    if (attempt.status === 'delivered') await this.alerts.updateOne({ _id: alert._id }, { $set: { last_delivery_at: now } });
  }
}
