import mongoose, { Types, type Connection } from 'mongoose';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import { endpointModel, type EndpointFields } from '../../models/endpoint.js';
import { alertModel } from '../../models/alert.js';
import { sealFor, SEALED_FIELDS, tryOpenFor } from '../../secrets/fields.js';
import { isDuplicateKey, OBJECT_ID_RE, withTimeout } from '../../db/mongo.js';
import { AccountCounters } from '../../accounts/counters.js';
import { ValidationError } from '../../core/errors.js';
import { findPage, type Page, type PageRequest } from '../../db/page.js';
import type { AccountEvents } from './events.js';
import { HostLookups } from './host-lookups.js';
import { EndpointHealth } from './health.js';
import { generateWebhookSecret, openedParts, SECRETS, UNSEALABLE_REASON, type Endpoint, type Retired } from './endpoint.js';
import { keyOf, sealedTarget, type AlertTarget } from './target.js';

const NEWEST_FIRST = { created_at: -1, _id: -1 } as const;

/** A removal that has held an endpoint this long died midway (its process stopped): another may take over. */
const RETIRING_STALE_MS = 60_000;

/** How often, and how long apart, a creation refused at the endpoint cap looks again (a concurrent one may be making the same endpoint). */
const CAP_RETRIES_MS = [50, 150, 400] as const;

/** The alerts named in a refusal to remove an endpoint. */
const USED_BY_SHOWN = 5;

export interface EndpointOptions {
  /** Endpoints one account may hold (ACCOUNT_MAX_ENDPOINTS; 0: no cap). */
  readonly maxEndpoints?: number;
  /** A removed endpoint's delivery records go with it. */
  readonly records?: EndpointRecords;
}

/** The delivery records of endpoints (src/alerts/deliveries/records.ts), as removing one drops its own. */
export interface EndpointRecords {
  removeForEndpoint(endpointId: Types.ObjectId): Promise<void>;
}

const { endpointSecret, endpointLegacySecrets, endpointTarget, alertSecret } = SEALED_FIELDS;

type NewEndpointFields = Pick<EndpointFields, 'channel' | 'secret_sealed' | 'target_sealed' | 'shown_url'>;

/** An alert as stored before endpoints existed: its own URL and sealed secret, no endpoint. */
interface LegacyAlert {
  _id: Types.ObjectId;
  user_id: Types.ObjectId;
  webhook_url: string;
}

/**
 * The accounts' endpoints: one per account, channel and target (a URL, an address), holding what
 * reaching it takes (sealed) and the delivery health. Creating an alert upserts its endpoint; deliveries read and update it. Calls made
 * from a delivery have deadlines (maxTimeMS on reads, DELIVERY_DB_TIMEOUT_MS on writes), so a
 * stalled MongoDB fails the attempt instead of holding the worker's slot.
 */
export class Endpoints {
  /** The endpoints each account holds, against ACCOUNT_MAX_ENDPOINTS. */
  readonly counters: AccountCounters<'endpoints'>;
  /** This process's DNS lookups of the accounts' host names, a few per account at once. */
  readonly lookups = new HostLookups();
  /** Their delivery health, as attempts read and write it. */
  readonly health: EndpointHealth;

  constructor(
    private readonly conn: Connection,
    private readonly appKey: Buffer,
    /** What the service did to the accounts' endpoints by itself (disabled one), as GET /api/events lists it. */
    readonly events: AccountEvents,
    private readonly opts: EndpointOptions = {},
  ) {
    this.counters = new AccountCounters(conn, { endpoints: (userId) => this.endpoints.countDocuments({ user_id: userId }) });
    this.health = new EndpointHealth(conn, appKey, events);
  }

  private get endpoints() {
    return endpointModel(this.conn);
  }

  private get alerts() {
    return alertModel(this.conn);
  }

  /**
   * The account's endpoint for `target` and its signing secret (null for the channels that do not
   * sign), made if the account has none. A new webhook endpoint takes the secret of the account's
   * alert of before endpoints existed on that URL, if there is one (its receiver already verifies
   * with it), else a new one; a chat endpoint seals its target. Concurrent calls meet at the unique
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
        target_sealed: sealFor(this.appKey, endpointTarget, id, sealedTarget(target)),
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
   * chat target sealed again, a webhook given a new secret (the answer shows it), legacy secrets that
   * do not open dropped; an endpoint disabled for that reason is enabled again. Concurrent repairs
   * meet at the old value: one writes, the others read what it wrote.
   */
  private async repaired(doc: EndpointFields, target: AlertTarget): Promise<EndpointFields> {
    const set: Partial<Record<'secret_sealed' | 'target_sealed' | 'legacy_secrets_sealed', string | string[]>> = {};
    if (target.channel === 'webhook' && doc.secret_sealed !== undefined) {
      if (tryOpenFor(this.appKey, endpointSecret, doc._id, doc.secret_sealed) === null) {
        set.secret_sealed = sealFor(this.appKey, endpointSecret, doc._id, generateWebhookSecret());
      }
      const legacy = doc.legacy_secrets_sealed ?? [];
      const opening = legacy.filter((l) => tryOpenFor(this.appKey, endpointLegacySecrets, doc._id, l) !== null);
      if (opening.length !== legacy.length) set.legacy_secrets_sealed = opening;
    }
    if (target.channel !== 'webhook' && target.channel !== 'email') {
      const opened = doc.target_sealed === undefined ? null : tryOpenFor(this.appKey, endpointTarget, doc._id, doc.target_sealed);
      const sealed = sealedTarget(target);
      if (opened !== sealed) set.target_sealed = sealFor(this.appKey, endpointTarget, doc._id, sealed);
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
    const known = openedParts(this.appKey, endpoint)?.secrets ?? [];
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
  ): Promise<EndpointFields> {
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
  private async placeOrExisting(userId: Types.ObjectId, url: string, max: number): Promise<EndpointFields | null> {
    for (const wait of CAP_RETRIES_MS) {
      await new Promise((r) => setTimeout(r, wait));
      const existing = await this.endpoints.findOne({ user_id: userId, url }).select(SECRETS).lean();
      if (existing) return existing;
      if (await this.counters.reserve(userId, 'endpoints', max)) return null;
    }
    const field = url.startsWith('mailto:') ? 'email' : url.startsWith('telegram:') ? 'telegram_chat_id' : 'webhook_url';
    throw new ValidationError({
      [field]: [
        `You may hold at most ${max} endpoints (ACCOUNT_MAX_ENDPOINTS): use a target you already have, or delete one no alert uses (DELETE /api/webhooks/{id}).`,
      ],
    });
  }

  /** The endpoint and its own secret; a secret that does not open is none (a delivery then finds it unusable). */
  private withSecret(doc: EndpointFields): { endpoint: Endpoint; secret: string | null } {
    const { secret_sealed, legacy_secrets_sealed: _l, target_sealed: _t, ...endpoint } = doc;
    return { endpoint, secret: secret_sealed === undefined ? null : tryOpenFor(this.appKey, endpointSecret, doc._id, secret_sealed) };
  }

  private write<T>(p: Promise<T>): Promise<T> {
    return withTimeout(p, DELIVERY_DB_TIMEOUT_MS, 'endpoint write');
  }
}
