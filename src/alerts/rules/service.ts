import { Types, type Connection } from 'mongoose';
import type { Config } from '../../../config/env.js';
import type { Country } from '../../core/identifiers.js';
import { alertModel, type AlertKind, type AlertReference } from '../../models/alert.js';
import { ValidationError, WebhookTargetRefusedError } from '../../core/errors.js';
import { isDuplicateKey, OBJECT_ID_RE } from '../../db/mongo.js';
import { findPage, type Page, type PageRequest } from '../../db/page.js';
import type { WatchService } from '../../watch/service.js';
import { AccountCounters } from '../../accounts/counters.js';
import { checkTargetUrl, type TargetLookup } from '../endpoints/target-url.js';
import type { Endpoints } from '../endpoints/endpoints.js';
import { shownUrl, type Endpoint } from '../endpoints/endpoint.js';
import { keyOf, type AlertTarget } from '../endpoints/target.js';
import { alertIdentity } from './identity.js';
import type { AlertSequences } from './sequences.js';
import { productModel } from '../../models/product.js';
import type { Alert, AlertView } from './alert.js';

/** The deliveries' records of alerts (src/alerts/deliveries/records.ts), as deleting one drops those it alone fired. */
export interface AlertRecords {
  removeForAlert(alertId: Types.ObjectId): Promise<void>;
}

export interface AlertRulesDeps {
  readonly conn: Connection;
  readonly config: Pick<Config, 'accounts' | 'alerts'>;
  readonly appKey: Buffer;
  readonly watches: WatchService;
  readonly endpoints: Endpoints;
  readonly sequences: AlertSequences;
  readonly records: AlertRecords;
  /** Tests: where webhook hosts resolve at creation. */
  readonly lookup?: TargetLookup;
}

interface AlertOptions {
  readonly asin: string;
  readonly country: Country;
  readonly kind: AlertKind;
  readonly price: number | null;
  readonly percent: number | null;
  /** rank_below / rank_above: the sales rank watched. */
  readonly rank?: number | null;
  /** price_drop / price_rise: the least move in minor units (exactly one of percent and amount). */
  readonly amount?: number | null;
  /** Default false. */
  readonly paused?: boolean;
  /** price_below: re-arming margin in minor units, and least time between firings (as posted, and in ms). */
  /** price_drop / price_rise: against what (default previous), and over how many days for lowest / highest. */
  readonly reference?: AlertReference;
  readonly days?: number | null;
  readonly rearmAbove?: number | null;
  readonly rearmAfter?: { readonly text: string; readonly ms: number } | null;
}

/** An alert as posted: where it delivers is a target on a channel, or a URL alone (a generic webhook, as before channels). */
export type NewAlert = AlertOptions & ({ readonly target: AlertTarget } | { readonly webhookUrl: string });

function targetOf(input: NewAlert): AlertTarget {
  return 'target' in input ? input.target : { channel: 'webhook', url: input.webhookUrl };
}

/**
 * The options a POST sets on an alert, new or existing. A POST re-arms it (src/alerts/rules/triggers.ts);
 * when it last fired stays, so `rearm_after` still holds.
 */
function optionsOf(input: AlertOptions) {
  return {
    price: input.price,
    percent: input.percent,
    rank: input.rank ?? null,
    amount: input.amount ?? null,
    reference: input.reference ?? 'previous',
    days: input.days ?? null,
    paused: input.paused ?? false,
    rearm_above: input.rearmAbove ?? null,
    rearm_after: input.rearmAfter?.text ?? null,
    rearm_after_ms: input.rearmAfter?.ms ?? null,
    armed: true,
  };
}

/** What POST /api/alerts did: made a new alert (201) or updated the account's identical alert (200). */
export interface SavedAlert extends AlertView {
  readonly created: boolean;
  /** The endpoint's signing secret: the same for every alert of the account on that URL; null for a channel that does not sign. */
  readonly secret: string | null;
}

const NEWEST_FIRST = { created_at: -1, _id: -1 } as const;

/**
 * How long a creation refused at the cap waits for reservations in flight. A reservation ends when
 * its creation has written (or given up), which on a loaded server can take a second or more, so the
 * wait is bounded by a deadline, with polls that back off from 25 ms to 200 ms.
 */
const RESERVATION_WAIT_MAX_MS = 5_000;
const RESERVATION_POLL_MS = { first: 25, max: 200 } as const;

/** Attempts of a creation that meets concurrent ones at the unique indexes, beyond one per place on the product. */
const EXTRA_CREATE_ATTEMPTS = 3;

/**
 * The accounts' alerts on products, several per account, product and kind when they differ in their
 * firing options or target (identity.ts), each delivering to its account's endpoint for its target.
 * An account sees only its own alerts: another's id answers as if it did not exist. What fires on
 * a change is the firing's (firing.ts); where it goes, the endpoints'.
 */
export class AlertRules {
  readonly counters: AccountCounters<'alerts'>;
  private readonly conn: Connection;
  private readonly config: Pick<Config, 'accounts' | 'alerts'>;
  private readonly appKey: Buffer;
  private readonly endpoints: Endpoints;

  constructor(private readonly deps: AlertRulesDeps) {
    this.conn = deps.conn;
    this.config = deps.config;
    this.appKey = deps.appKey;
    this.endpoints = deps.endpoints;
    this.counters = new AccountCounters(deps.conn, { alerts: (userId) => this.alerts.countDocuments({ user_id: userId }) });
  }

  private get alerts() {
    return alertModel(this.conn);
  }

  /**
   * Creates the account's alert, or updates its identical one (same product, kind, firing options
   * and target; identity.ts) with what is state rather than identity (`paused`, re-armed): posting
   * an alert twice is one alert. Checks the target first (where a URL resolves; that e-mail is
   * configured at all), takes a free place on the product under ACCOUNT_MAX_ALERTS_PER_PRODUCT and
   * a place under ACCOUNT_MAX_ALERTS before inserting (given back if the insert fails), so
   * concurrent creations cannot pass either cap: the product's places are a unique index. Concurrent
   * identical creations meet at the identity's unique index: the loser starts over, finds the
   * winner's alert and applies its input to it. So does a loser of a race for a place (it takes the
   * next free one), or of one for the watch, product or endpoint a concurrent creation writes.
   */
  async create(userId: Types.ObjectId, input: NewAlert): Promise<SavedAlert> {
    const target = targetOf(input);
    await this.checkTarget(userId, target);
    const identity = alertIdentity({ kind: input.kind, ...optionsOf(input) }, keyOf(target, this.appKey).key);
    const attempts = (this.config.accounts.maxAlertsPerProduct || 10) + EXTRA_CREATE_ATTEMPTS;
    for (let attempt = 1; ; attempt++) {
      const existing = await this.existing(userId, input, identity);
      if (existing) return this.update(existing, input);
      const slot = await this.freeSlot(userId, input, identity);
      if (typeof slot !== 'number') return this.update(slot, input);
      const made = await this.reservePlace(userId, input, identity);
      if (made) return this.update(made, input);
      try {
        await this.deps.watches.ensureAsinWatched(userId, input.asin);
        const { endpoint, secret } = await this.endpoints.upsert(userId, target);
        const doc = await this.alerts.create({
          user_id: userId,
          asin: input.asin,
          country: input.country,
          kind: input.kind,
          identity,
          slot,
          ...(await this.postedFields(input, target, endpoint)),
          last_delivery_at: null,
        });
        const settled = await this.endpoints.settle(doc._id, userId, target, { endpoint, secret });
        return { alert: { ...doc.toObject(), endpoint_id: settled.endpoint._id }, ...settled, created: true };
      } catch (err) {
        await this.counters.release(userId, 'alerts');
        if (!isDuplicateKey(err) || attempt >= attempts) throw err;
      }
    }
  }

  /**
   * The lowest place on the product the account's alerts leave free, below
   * ACCOUNT_MAX_ALERTS_PER_PRODUCT. At the cap, 422; unless the identical alert was made meanwhile
   * (a concurrent identical creation took the last place): that alert.
   */
  private async freeSlot(userId: Types.ObjectId, input: NewAlert, identity: string): Promise<number | Alert> {
    const max = this.config.accounts.maxAlertsPerProduct;
    const held = await this.alerts.find({ user_id: userId, country: input.country, asin: input.asin }).select({ slot: 1 }).lean();
    const taken = new Set(held.flatMap((a) => (typeof a.slot === 'number' ? [a.slot] : [])));
    let slot = 0;
    while (taken.has(slot)) slot++;
    if (max > 0 && (held.length >= max || slot >= max)) {
      const made = await this.existing(userId, input, identity);
      if (made) return made;
      throw new ValidationError({
        asin: [`You may hold at most ${max} alerts on one product in one country (ACCOUNT_MAX_ALERTS_PER_PRODUCT).`],
      });
    }
    return slot;
  }

  /**
   * A URL must resolve to public addresses (unless ENDPOINT_ALLOW_PRIVATE), as it will be checked
   * again at every attempt; e-mail needs the operator's SMTP server. 422 otherwise. A Telegram
   * target names no URL (its bot token and chat id are checked by their shapes).
   */
  private async checkTarget(userId: Types.ObjectId, target: AlertTarget): Promise<void> {
    if (target.channel === 'email') {
      if (this.config.alerts.smtp) return;
      throw new ValidationError({
        channel: ['E-mail alerts are off on this server: its operator has not configured SMTP (SMTP_URL and SMTP_FROM).'],
      });
    }
    // The Bot API is the operator's TELEGRAM_API_URL, not a URL the account gave: the guard judges it at each connection.
    if (target.channel === 'telegram') return;
    try {
      const lookup = this.deps.lookup ?? this.endpoints.lookups.forAccount(userId);
      await checkTargetUrl(target.url, { allowPrivate: this.config.alerts.allowPrivate, lookup });
    } catch (err) {
      if (err instanceof WebhookTargetRefusedError) throw new ValidationError({ webhook_url: [err.message] });
      throw err;
    }
  }

  /**
   * Takes a place under ACCOUNT_MAX_ALERTS for a new alert. At the cap, concurrent identical POSTs
   * may hold the places (each reserves before the one that wins inserts): while the counter is
   * above the real count such reservations are in flight, so a refused request waits for them to
   * end, briefly, and answers an update when one of them made this very alert.
   */
  private async reservePlace(userId: Types.ObjectId, input: NewAlert, identity: string): Promise<Alert | null> {
    const { maxAlerts } = this.config.accounts;
    const deadline = Date.now() + RESERVATION_WAIT_MAX_MS;
    for (let poll: number = RESERVATION_POLL_MS.first; ; poll = Math.min(RESERVATION_POLL_MS.max, poll * 2)) {
      if (await this.counters.reserve(userId, 'alerts', maxAlerts)) return null;
      const made = await this.existing(userId, input, identity);
      if (made) return made;
      const held = (await this.counters.value(userId, 'alerts')) ?? 0;
      if (Date.now() >= deadline || held <= (await this.alerts.countDocuments({ user_id: userId }))) {
        throw new ValidationError({ kind: [`You may hold at most ${maxAlerts} alerts (ACCOUNT_MAX_ALERTS).`] });
      }
      await new Promise((r) => setTimeout(r, poll));
    }
  }

  private existing(userId: Types.ObjectId, input: NewAlert, identity: string): Promise<Alert | null> {
    return this.alerts.findOne({ user_id: userId, country: input.country, asin: input.asin, kind: input.kind, identity }).lean();
  }

  /**
   * The account's identical alert takes the input again: its `paused`, re-armed, and its options as
   * posted. An alert of before endpoints moves to its endpoint first (keeping its secret there); one
   * that a 410 disabled under the old per-alert rule is enabled again: posting it is asking for it.
   */
  private async update(alert: Alert, input: NewAlert): Promise<SavedAlert> {
    if (!alert.endpoint_id) await this.endpoints.adopt(alert);
    const target = targetOf(input);
    const { endpoint, secret } = await this.endpoints.upsert(alert.user_id, target);
    const updated = await this.alerts
      .findOneAndUpdate({ _id: alert._id }, { $set: await this.postedFields(input, target, endpoint) }, { returnDocument: 'after' })
      .lean();
    // Deleted between the read and this write: create it as new.
    if (!updated) return this.create(alert.user_id, input);
    const settled = await this.endpoints.settle(updated._id, updated.user_id, target, { endpoint, secret });
    // Moved to another target: the one it leaves goes when no alert uses it any more.
    if (alert.endpoint_id && !alert.endpoint_id.equals(settled.endpoint._id)) await this.endpoints.removeIfUnused(alert.endpoint_id);
    return { alert: { ...updated, endpoint_id: settled.endpoint._id }, ...settled, created: false };
  }

  /** What a POST sets on an alert, new or existing: its options and reference price, where it delivers; enabled. */
  private async postedFields(input: NewAlert, target: AlertTarget, endpoint: Endpoint) {
    return {
      ...optionsOf(input),
      ...(await this.currentPrice(input)),
      channel: target.channel,
      webhook_url: shownUrl(endpoint),
      endpoint_id: endpoint._id,
      disabled_at: null,
      disabled_reason: null,
    };
  }

  async list(userId: Types.ObjectId, page: PageRequest): Promise<Page<AlertView>> {
    const { items, total } = await findPage(this.alerts, { user_id: userId }, NEWEST_FIRST, page);
    return { items: await this.withEndpoints(items), total };
  }

  /**
   * Pauses or resumes the account's alert; null when it has no such alert. A paused alert is not
   * judged at all, so resuming fires nothing for what changed meanwhile: every kind fires on a
   * change between two points, and price_below on a crossing. Resuming re-arms it.
   */
  async setPaused(userId: Types.ObjectId, id: string, paused: boolean): Promise<AlertView | null> {
    if (!OBJECT_ID_RE.test(id)) return null;
    const updated = await this.alerts
      .findOneAndUpdate(
        { _id: new Types.ObjectId(id), user_id: userId },
        { $set: paused ? { paused } : { paused, armed: true } },
        { returnDocument: 'after' },
      )
      .lean();
    return updated ? (await this.withEndpoints([updated]))[0]! : null;
  }

  /** The account's alert with this id; null for a malformed id, another account's, or none. */
  async find(userId: Types.ObjectId, id: string): Promise<AlertView | null> {
    const alert = await this.own(userId, id);
    return alert ? (await this.withEndpoints([alert]))[0]! : null;
  }

  /**
   * Deletes the alert, gives its place under the cap back, and deletes the records of deliveries
   * it alone fired and its sequence counters; a delivery still queued finds none of its alerts left and stops.
   * Its endpoint goes too when no other alert uses it (endpoints/endpoints.ts, `retire`).
   */
  async remove(userId: Types.ObjectId, id: string): Promise<AlertView | null> {
    if (!OBJECT_ID_RE.test(id)) return null;
    const removed = await this.alerts.findOneAndDelete({ _id: new Types.ObjectId(id), user_id: userId }).lean();
    if (!removed) return null;
    await this.counters.release(userId, 'alerts');
    await this.deps.records.removeForAlert(removed._id);
    await this.deps.sequences.removeForAlert(removed._id);
    const view = (await this.withEndpoints([removed]))[0]!;
    if (removed.endpoint_id) await this.endpoints.removeIfUnused(removed.endpoint_id);
    return view;
  }

  /** The product's price now, as an at_creation alert takes it; nulls when it has none yet. */
  private async currentPrice(input: NewAlert): Promise<{ reference_price: number | null; reference_currency: string | null }> {
    if (input.kind !== 'price_drop' && input.kind !== 'price_rise') return { reference_price: null, reference_currency: null };
    if (input.reference !== 'at_creation') return { reference_price: null, reference_currency: null };
    const product = await productModel(this.conn).findOne({ country: input.country, asin: input.asin }).select({ price: 1 }).lean();
    return { reference_price: product?.price?.amount ?? null, reference_currency: product?.price?.currency ?? null };
  }

  private own(userId: Types.ObjectId, id: string): Promise<Alert | null> {
    if (!OBJECT_ID_RE.test(id)) return Promise.resolve(null);
    return this.alerts.findOne({ _id: new Types.ObjectId(id), user_id: userId }).lean();
  }

  private async withEndpoints(alerts: readonly Alert[]): Promise<AlertView[]> {
    const ids = alerts.flatMap((a) => (a.endpoint_id ? [a.endpoint_id] : []));
    const endpoints = await this.endpoints.byIds(ids);
    return alerts.map((alert) => ({
      alert,
      endpoint: alert.endpoint_id ? (endpoints.get(alert.endpoint_id.toHexString()) ?? null) : null,
    }));
  }
}
