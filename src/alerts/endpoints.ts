import mongoose, { Types, type Connection } from 'mongoose';
import { DELIVERY_DB_TIMEOUT_MS } from '../../config/alerts.js';
import { webhookEndpointModel, type WebhookEndpointFields } from '../models/webhook-endpoint.js';
import { alertModel } from '../models/alert.js';
import { sealFor, SEALED_FIELDS, tryOpenFor } from '../secrets/fields.js';
import { isDuplicateKey, OBJECT_ID_RE, withTimeout } from '../db/mongo.js';
import { AccountCounters } from '../accounts/counters.js';
import { ValidationError } from '../core/errors.js';
import type { DeliveryRecords } from './delivery-records.js';
import { findPage, type Page, type PageRequest } from '../db/page.js';
import type { AlertChannel } from '../models/alert.js';
import { generateWebhookSecret } from './send-webhook.js';
import type { AccountEvents } from './events.js';
import { addressOf, keyOf, type AlertTarget } from './channels/target.js';
import { isChatChannel } from '../models/alert.js';

export type Endpoint = Omit<WebhookEndpointFields, 'secret_sealed' | 'legacy_secrets_sealed' | 'target_sealed'>;
export type EndpointState = 'active' | 'failing' | 'disabled';

export function endpointState(e: Pick<Endpoint, 'disabled_at' | 'failing_since'>): EndpointState {
  return e.disabled_at ? 'disabled' : e.failing_since ? 'failing' : 'active';
}

/** Endpoints stored before channels have none: they are webhooks. */
export function channelOf(e: Pick<Endpoint, 'channel'>): AlertChannel {
  return e.channel ?? 'webhook';
}

/** The endpoint's target as answers and events show it: a chat webhook's URL only redacted. */
export function shownUrl(e: Pick<Endpoint, 'url' | 'shown_url'>): string {
  return e.shown_url ?? e.url;
}

/** What a delivery needs to reach an endpoint, its sealed parts opened. */
export interface DeliveryEndpoint {
  readonly endpoint: Endpoint;
  readonly channel: AlertChannel;
  /** The URL to POST to (webhook and chat channels), or the address to mail (e-mail). */
  readonly target: string;
  /** The webhook's signing secrets, its own first; none for the other channels, which are not signed. */
  readonly secrets: string[];
  /**
   * Why nothing may be sent: a sealed part of the endpoint did not open (the endpoint is disabled
   * with this reason, `target` and `secrets` are empty); null when it can be reached.
   */
  readonly unusable: string | null;
}

const NEWEST_FIRST = { created_at: -1, _id: -1 } as const;

/** A removal that has held an endpoint this long died midway (its process stopped): another may take over. */
const RETIRING_STALE_MS = 60_000;

/** How often, and how long apart, a creation refused at the endpoint cap looks again (a concurrent one may be making the same endpoint). */
const CAP_RETRIES_MS = [50, 150, 400] as const;

/** The alerts named in a refusal to remove an endpoint. */
const USED_BY_SHOWN = 5;

/** What removing an endpoint came to: removed, still used by alerts, or claimed by another request meanwhile. */
export type Retired =
  | { readonly removed: true }
  | { readonly removed: false; readonly usedBy: { readonly count: number; readonly ids: readonly Types.ObjectId[] } }
  | { readonly removed: false; readonly busy: true };

export interface EndpointOptions {
  /** Endpoints one account may hold (ACCOUNT_MAX_ENDPOINTS; 0: no cap). */
  readonly maxEndpoints?: number;
  /** A removed endpoint's delivery records go with it. */
  readonly records?: DeliveryRecords;
}
const SECRETS = '+secret_sealed +legacy_secrets_sealed +target_sealed';
const GONE_REASON = 'the receiver answered 410 Gone';
/** The reason of an endpoint whose sealed target or secret does not open; posting its alert again stores them anew. */
export const UNSEALABLE_REASON =
  'its sealed target or signing secret does not open (moved from another record, altered, or sealed under another APP_KEY); post the alert again to store it anew';

const { endpointSecret, endpointLegacySecrets, endpointTarget, alertSecret } = SEALED_FIELDS;

type SealedParts = Pick<WebhookEndpointFields, '_id' | 'secret_sealed' | 'legacy_secrets_sealed' | 'target_sealed'>;
type NewEndpointFields = Pick<WebhookEndpointFields, 'channel' | 'secret_sealed' | 'target_sealed' | 'shown_url'>;

/** An alert as stored before endpoints existed: its own URL and sealed secret, no endpoint. */
interface LegacyAlert {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  webhook_url: string;
}

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
 * The accounts' endpoints: one per account, channel and target (a URL, an address), holding what
 * reaching it takes (sealed) and the delivery health. Creating an alert upserts its endpoint; deliveries read and update it. Calls made
 * from a delivery have deadlines (maxTimeMS on reads, DELIVERY_DB_TIMEOUT_MS on writes), so a
 * stalled MongoDB fails the attempt instead of holding the worker's slot.
 */
export class WebhookEndpoints {
  /** The endpoints each account holds, against ACCOUNT_MAX_ENDPOINTS. */
  readonly counters: AccountCounters<'endpoints'>;

  constructor(
    private readonly conn: Connection,
    private readonly appKey: Buffer,
    private readonly events: AccountEvents,
    private readonly opts: EndpointOptions = {},
  ) {
    this.counters = new AccountCounters(conn, { endpoints: (userId) => this.endpoints.countDocuments({ user_id: userId }) });
  }

  private get endpoints() {
    return webhookEndpointModel(this.conn);
  }

  private get alerts() {
    return alertModel(this.conn);
  }

  /**
   * The account's endpoint for `target` and its signing secret (null for the channels that do not
   * sign), made if the account has none. A new webhook endpoint takes the secret of the account's
   * alert of before endpoints existed on that URL, if there is one (its receiver already verifies
   * with it), else a new one; a chat endpoint seals its URL. Concurrent calls meet at the unique
   * (user_id, url) index, `url` being the target's key: the one that loses reads the winner's.
   */
  async upsert(userId: Types.ObjectId, target: AlertTarget): Promise<{ endpoint: Endpoint; secret: string | null }> {
    const { channel, key, shown } = keyOf(target, this.appKey);
    const existing = await this.endpoints.findOne({ user_id: userId, url: key }).select(SECRETS).lean();
    if (existing) return this.withSecret(await this.repaired(existing, target));
    if (target.channel === 'email') return this.withSecret(await this.insertOrRead(userId, key, () => ({ channel })));
    if (target.channel !== 'webhook') {
      const fields = (id: Types.ObjectId) => ({
        channel,
        target_sealed: sealFor(this.appKey, endpointTarget, id, target.url),
        shown_url: shown,
      });
      return this.withSecret(await this.insertOrRead(userId, key, fields));
    }
    const legacy = await this.alerts
      .findOne({ user_id: userId, webhook_url: key, endpoint_id: null, secret_sealed: mongoose.trusted({ $exists: true }) })
      .select('+secret_sealed')
      .lean();
    const secret =
      (legacy?.secret_sealed && tryOpenFor(this.appKey, alertSecret, legacy._id, legacy.secret_sealed)) || generateWebhookSecret();
    return this.withSecret(
      await this.insertOrRead(userId, key, (id) => ({ channel, secret_sealed: sealFor(this.appKey, endpointSecret, id, secret) })),
    );
  }

  /**
   * The endpoint with what of its sealed parts did not open stored anew from the posted target: a
   * chat URL sealed again, a webhook given a new secret (the answer shows it), legacy secrets that
   * do not open dropped; an endpoint disabled for that reason is enabled again. Concurrent repairs
   * meet at the old value: one writes, the others read what it wrote.
   */
  private async repaired(doc: WebhookEndpointFields, target: AlertTarget): Promise<WebhookEndpointFields> {
    const set: Partial<Record<'secret_sealed' | 'target_sealed' | 'legacy_secrets_sealed', string | string[]>> = {};
    if (target.channel === 'webhook' && doc.secret_sealed !== undefined) {
      if (tryOpenFor(this.appKey, endpointSecret, doc._id, doc.secret_sealed) === null) {
        set.secret_sealed = sealFor(this.appKey, endpointSecret, doc._id, generateWebhookSecret());
      }
      const legacy = doc.legacy_secrets_sealed ?? [];
      const opening = legacy.filter((l) => tryOpenFor(this.appKey, endpointLegacySecrets, doc._id, l) !== null);
      if (opening.length !== legacy.length) set.legacy_secrets_sealed = opening;
    }
    if (isChatChannel(target.channel) && 'url' in target) {
      const url = doc.target_sealed === undefined ? null : tryOpenFor(this.appKey, endpointTarget, doc._id, doc.target_sealed);
      if (url !== target.url) set.target_sealed = sealFor(this.appKey, endpointTarget, doc._id, target.url);
    }
    if (Object.keys(set).length === 0) return doc;
    const enable = doc.disabled_reason === UNSEALABLE_REASON ? { disabled_at: null, disabled_reason: null, failing_since: null } : {};
    const unchanged = Object.fromEntries(Object.keys(set).map((f) => [f, doc[f as keyof typeof set] ?? null]));
    await this.write(this.endpoints.updateOne({ _id: doc._id, ...unchanged }, { $set: { ...set, ...enable } }).exec());
    return (await this.endpoints.findById(doc._id).select(SECRETS).lean()) ?? doc;
  }

  /**
   * Moves an alert of before endpoints existed to its account's endpoint for its URL, making the
   * endpoint from the alert's URL and secret when the account has none there. When the account
   * already has one with another secret (two old alerts on one URL with different secrets, or an
   * alert created since), the alert's secret joins the endpoint's `legacy_secrets_sealed`: every
   * delivery is then signed with each of them (Standard Webhooks allows several signatures), so a
   * receiver set up with either secret keeps verifying, and the 201 of a new alert on that URL
   * shows the endpoint's own. Idempotent: an alert already moved answers its endpoint.
   */
  async adopt(alert: LegacyAlert): Promise<Endpoint | null> {
    const doc = await this.alerts.findById(alert._id).select('+secret_sealed').maxTimeMS(DELIVERY_DB_TIMEOUT_MS).lean();
    if (!doc) return null;
    if (doc.endpoint_id) return this.byId(doc.endpoint_id);
    // A secret that does not open here was never this alert's: its receiver cannot be verifying with it.
    const own = doc.secret_sealed === undefined ? null : tryOpenFor(this.appKey, alertSecret, doc._id, doc.secret_sealed);
    const secret = own ?? generateWebhookSecret();
    // An alert that exists keeps working: its endpoint is counted, never refused at the cap.
    const endpoint = await this.insertOrRead(
      doc.user_id,
      doc.webhook_url,
      (id) => ({ channel: 'webhook', secret_sealed: sealFor(this.appKey, endpointSecret, id, secret) }),
      false,
    );
    const known = this.opened(endpoint)?.secrets ?? [];
    if (own !== null && !known.includes(own)) {
      const sealed = sealFor(this.appKey, endpointLegacySecrets, endpoint._id, own);
      await this.write(this.endpoints.updateOne({ _id: endpoint._id }, { $push: { legacy_secrets_sealed: sealed } }).exec());
    }
    await this.write(
      this.alerts
        .updateOne({ _id: doc._id, endpoint_id: null }, { $set: { endpoint_id: endpoint._id }, $unset: { secret_sealed: 1 } })
        .exec(),
    );
    if (!(await this.confirm(endpoint._id))) {
      // Removed before the alert was seen on it (it had no alert then): the alert takes a new one.
      await this.write(this.alerts.updateOne({ _id: doc._id, endpoint_id: endpoint._id }, { $set: { endpoint_id: null } }).exec());
      return this.adopt(alert);
    }
    const { secret_sealed: _s, legacy_secrets_sealed: _l, target_sealed: _t, ...plain } = endpoint;
    return plain;
  }

  /** Moves every alert of the account still without an endpoint (at most `limit`), so a list shows them all. */
  async adoptAll(userId: Types.ObjectId, limit = 1_000): Promise<void> {
    const legacy = await this.alerts
      .find({ user_id: userId, endpoint_id: null })
      .select({ user_id: 1, webhook_url: 1 })
      .limit(limit)
      .lean();
    for (const alert of legacy) await this.adopt(alert);
  }

  async list(userId: Types.ObjectId, page: PageRequest): Promise<Page<Endpoint>> {
    await this.adoptAll(userId);
    return findPage(this.endpoints, { user_id: userId }, NEWEST_FIRST, page);
  }

  /** The account's endpoint with this id; null for a malformed id, another account's, or none. */
  async find(userId: Types.ObjectId, id: string): Promise<Endpoint | null> {
    if (!OBJECT_ID_RE.test(id)) return null;
    return this.endpoints.findOne({ _id: new Types.ObjectId(id), user_id: userId }).lean();
  }

  /** The ids of the account's disabled endpoints (a bulk replay leaves their deliveries). */
  async disabledIds(userId: Types.ObjectId): Promise<Types.ObjectId[]> {
    const found = await this.endpoints
      .find({ user_id: userId, disabled_at: mongoose.trusted({ $ne: null }) })
      .select({ _id: 1 })
      .lean();
    return found.map((e) => e._id);
  }

  /** Deliveries go to it again: clears the disabled state and the failure span. */
  async enable(userId: Types.ObjectId, id: string): Promise<Endpoint | null> {
    if (!OBJECT_ID_RE.test(id)) return null;
    return this.endpoints
      .findOneAndUpdate(
        { _id: new Types.ObjectId(id), user_id: userId },
        { $set: { disabled_at: null, disabled_reason: null, failing_since: null } },
        { returnDocument: 'after' },
      )
      .lean();
  }

  /**
   * Ends an attach: `alertId` was just written to point at `current` (its account's endpoint for
   * `target`). When a removal took that endpoint meanwhile (it had no alert when the removal
   * looked), the alert moves to the account's endpoint for the target, made anew; answers the
   * endpoint the alert now points at, which then exists and cannot be removed while it does.
   */
  async settle(
    alertId: Types.ObjectId,
    userId: Types.ObjectId,
    target: AlertTarget,
    current: { endpoint: Endpoint; secret: string | null },
  ): Promise<{ endpoint: Endpoint; secret: string | null }> {
    for (let tries = 0; tries < 3; tries++) {
      if (await this.confirm(current.endpoint._id)) return current;
      current = await this.upsert(userId, target);
      await this.write(this.alerts.updateOne({ _id: alertId }, { $set: { endpoint_id: current.endpoint._id } }).exec());
    }
    throw new Error(`the endpoint of alert ${alertId.toHexString()} was removed three times while it was attached`);
  }

  /**
   * Removes the account's endpoint when no alert uses it: null when it has no such endpoint, else
   * what came of it (DELETE /api/webhooks/{id}).
   */
  async remove(userId: Types.ObjectId, id: string): Promise<Retired | null> {
    if (!OBJECT_ID_RE.test(id)) return null;
    const endpoint = await this.endpoints
      .findOne({ _id: new Types.ObjectId(id), user_id: userId })
      .select({ _id: 1, user_id: 1 })
      .lean();
    return endpoint ? this.retire(endpoint) : null;
  }

  /** Removes the endpoint if no alert uses it any more (an alert deleted or moved off it); quietly keeps it otherwise. */
  async removeIfUnused(id: Types.ObjectId): Promise<void> {
    const endpoint = await this.endpoints.findById(id).select({ _id: 1, user_id: 1 }).lean();
    if (endpoint) await this.retire(endpoint);
  }

  /**
   * The removal, safe against an alert being attached at the same moment. It marks the endpoint
   * with a token of its own, then counts the alerts on it, then deletes it only if the mark is still
   * its own. An attach writes its alert first and clears any mark after (`confirm`): a removal that
   * marked before the clear fails its delete; one that marked after it counts that alert. So an
   * alert never ends up on a deleted endpoint, or, when the attach found the endpoint already gone,
   * it moves to a new one (`settle`). A mark older than a minute is a removal that died; another
   * may take it over. The endpoint's delivery records go with it, and its place under the cap.
   */
  private async retire(endpoint: { _id: Types.ObjectId; user_id: Types.ObjectId }): Promise<Retired> {
    const token = new Types.ObjectId();
    const stale = Types.ObjectId.createFromTime(Math.floor((Date.now() - RETIRING_STALE_MS) / 1_000));
    const marked = await this.write(
      this.endpoints
        .updateOne(
          { _id: endpoint._id, $or: [{ retiring: null }, { retiring: mongoose.trusted({ $lt: stale }) }] },
          { $set: { retiring: token } },
        )
        .exec(),
    );
    if (marked.matchedCount === 0) return { removed: false, busy: true };
    const count = await this.alerts.countDocuments({ endpoint_id: endpoint._id });
    if (count > 0) {
      const ids = await this.alerts.find({ endpoint_id: endpoint._id }).sort({ _id: 1 }).limit(USED_BY_SHOWN).select({ _id: 1 }).lean();
      await this.write(this.endpoints.updateOne({ _id: endpoint._id, retiring: token }, { $set: { retiring: null } }).exec());
      return { removed: false, usedBy: { count, ids: ids.map((a) => a._id) } };
    }
    const deleted = await this.write(this.endpoints.deleteOne({ _id: endpoint._id, retiring: token }).exec());
    if (deleted.deletedCount !== 1) return { removed: false, busy: true };
    if ((this.opts.maxEndpoints ?? 0) > 0) await this.counters.release(endpoint.user_id, 'endpoints');
    await this.opts.records?.removeForEndpoint(endpoint._id);
    return { removed: true };
  }

  /** Clears any removal's mark, after an alert was written onto the endpoint: true when the endpoint is still there. */
  private async confirm(id: Types.ObjectId): Promise<boolean> {
    await this.write(this.endpoints.updateOne({ _id: id, retiring: mongoose.trusted({ $ne: null }) }, { $set: { retiring: null } }).exec());
    return (await this.endpoints.exists({ _id: id })) !== null;
  }

  async byId(id: Types.ObjectId): Promise<Endpoint | null> {
    return this.endpoints.findById(id).maxTimeMS(DELIVERY_DB_TIMEOUT_MS).lean();
  }

  /** The endpoints of these ids, by id (a batch's deliveries: one query). */
  async byIds(ids: readonly Types.ObjectId[]): Promise<Map<string, Endpoint>> {
    if (ids.length === 0) return new Map();
    const found = await this.endpoints
      .find({ _id: mongoose.trusted({ $in: [...ids] }) })
      .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
      .lean();
    return new Map(found.map((e) => [e._id.toHexString(), e]));
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
    const opened = this.opened(doc);
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

  /**
   * The account's endpoint at `url`, inserted with `fields` when it has none. The id of a new one is
   * chosen here, as its sealed parts are bound to it. A new one takes a place under
   * ACCOUNT_MAX_ENDPOINTS first (one conditional increment, so concurrent creations cannot pass the
   * cap), given back when another request inserted it first; `capped` false (an existing alert
   * moving to its endpoint) counts it without refusing.
   */
  private async insertOrRead(
    userId: Types.ObjectId,
    url: string,
    fields: (id: Types.ObjectId) => NewEndpointFields,
    capped = true,
  ): Promise<WebhookEndpointFields> {
    const max = this.opts.maxEndpoints ?? 0;
    if (max > 0 && !(await this.counters.reserve(userId, 'endpoints', capped ? max : Number.MAX_SAFE_INTEGER))) {
      const made = await this.placeOrExisting(userId, url, max);
      if (made) return made;
    }
    const id = new Types.ObjectId();
    let inserted = false;
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        try {
          const doc = await this.write(
            this.endpoints
              .findOneAndUpdate(
                { user_id: userId, url },
                { $setOnInsert: { _id: id, ...fields(id), legacy_secrets_sealed: [] } },
                { upsert: true, returnDocument: 'after', setDefaultsOnInsert: true },
              )
              .select(SECRETS)
              .lean()
              .exec(),
          );
          if (doc) {
            inserted = doc._id.equals(id);
            return doc;
          }
        } catch (err) {
          // Two upserts of one new endpoint: the loser's insert hits the unique index; read the winner's.
          if (!isDuplicateKey(err) || attempt > 0) throw err;
        }
      }
      throw new Error(`the endpoint of ${url} was neither inserted nor found`);
    } finally {
      if (max > 0 && !inserted) await this.counters.release(userId, 'endpoints');
    }
  }

  /**
   * At the cap: a concurrent request may be making this very endpoint (it holds the last place),
   * or removing one; looks again a few times, briefly. Answers the endpoint when it appeared, null
   * when a place came free (taken), and refuses with 422 otherwise.
   */
  private async placeOrExisting(userId: Types.ObjectId, url: string, max: number): Promise<WebhookEndpointFields | null> {
    for (const wait of CAP_RETRIES_MS) {
      await new Promise((r) => setTimeout(r, wait));
      const existing = await this.endpoints.findOne({ user_id: userId, url }).select(SECRETS).lean();
      if (existing) return existing;
      if (await this.counters.reserve(userId, 'endpoints', max)) return null;
    }
    const field = url.startsWith('mailto:') ? 'email' : 'webhook_url';
    throw new ValidationError({
      [field]: [
        `You may hold at most ${max} endpoints (ACCOUNT_MAX_ENDPOINTS): use a target you already have, or delete one no alert uses (DELETE /api/webhooks/{id}).`,
      ],
    });
  }

  /** The endpoint and its own secret; a secret that does not open is none (a delivery then finds it unusable). */
  private withSecret(doc: WebhookEndpointFields): { endpoint: Endpoint; secret: string | null } {
    const { secret_sealed, legacy_secrets_sealed: _l, target_sealed: _t, ...endpoint } = doc;
    return { endpoint, secret: secret_sealed === undefined ? null : tryOpenFor(this.appKey, endpointSecret, doc._id, secret_sealed) };
  }

  /**
   * The endpoint's sealed parts opened: its chat URL (null for the channels that have none) and every
   * secret it signs with, its own first; null when any of them does not open.
   */
  private opened(doc: SealedParts): { target: string | null; secrets: string[] } | null {
    const own = doc.secret_sealed === undefined ? [] : [tryOpenFor(this.appKey, endpointSecret, doc._id, doc.secret_sealed)];
    const legacy = (doc.legacy_secrets_sealed ?? []).map((l) => tryOpenFor(this.appKey, endpointLegacySecrets, doc._id, l));
    const target = doc.target_sealed === undefined ? null : tryOpenFor(this.appKey, endpointTarget, doc._id, doc.target_sealed);
    const secrets = [...own, ...legacy];
    if (secrets.includes(null) || (doc.target_sealed !== undefined && target === null)) return null;
    return { target, secrets: secrets as string[] };
  }

  private write<T>(p: Promise<T>): Promise<T> {
    return withTimeout(p, DELIVERY_DB_TIMEOUT_MS, 'endpoint write');
  }
}
