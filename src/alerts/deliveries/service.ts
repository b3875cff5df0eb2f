import { Types } from 'mongoose';
import type { Config } from '../../../config/env.js';
import type { ProductChange } from '../../catalog/history.js';
import type { Logger } from '../../logger.js';
import type { Alert } from '../rules/alert.js';
import type { AlertFiring, Fired } from '../rules/firing.js';
import type { AlertRules } from '../rules/service.js';
import type { AlertSequences } from '../rules/sequences.js';
import type { Endpoints } from '../endpoints/endpoints.js';
import type { Endpoint } from '../endpoints/endpoint.js';
import type { Page, PageRequest } from '../../db/page.js';
import type { Claimed, DeliveryRecord, DeliveryRecords } from './records.js';
import type { FairTags } from '../../fairness/fair-tags.js';
import type { AccountWeights } from '../../accounts/weights.js';
import type { DeliveredAlerts } from './alerts.js';
import type { HeldDeliveries } from './held.js';
import { dueAt, holds } from './digest-schedule.js';
import { digestSettingsOf } from '../endpoints/digest-settings.js';
import {
  DELIVERIES_LANE,
  deliveryContentSchema,
  deliveryJobId,
  digestPayloadSchema,
  deliveryPayloadSchema,
  isDigest,
  REPLAY_LIMIT,
  sentContentSchema,
  thresholdOf,
  type DeliveryJob,
  type DeliveryJobs,
  type PayloadPoint,
  type SentContent,
} from './payload.js';

/**
 * Deliveries: one job per endpoint and change on the deliveries' queue (the delivery job kind,
 * jobs/deliver.ts). Jobs are queued fairly between accounts: each gets its account's start tag in
 * the `deliveries` lane as its priority (src/fairness/fair-tags.ts), so one account's backlog to a
 * slow receiver delays another account's new delivery by about one attempt, not by the backlog.
 */

const toPoint = (p: NonNullable<ProductChange['before']>): PayloadPoint => ({ ...p, at: p.at.getTime() });

export interface DeliveriesDeps {
  readonly jobs: DeliveryJobs;
  readonly logger: Logger;
  readonly config: Pick<Config, 'alerts' | 'timeZone'>;
  readonly fair: FairTags;
  readonly weights: AccountWeights;
  readonly firing: AlertFiring;
  readonly rules: Pick<AlertRules, 'find'>;
  readonly sequences: AlertSequences;
  readonly endpoints: Endpoints;
  readonly records: DeliveryRecords;
  readonly alerts: DeliveredAlerts;
  /** Where deliveries wait for a digest or the end of quiet hours. */
  readonly held: HeldDeliveries;
  /** The clock that says when a delivery fired (and so whether it is held). */
  readonly now: () => Date;
}

/** A delivery or digest to queue now: its id (the job's), where it goes, what fired it, and what it says. */
export interface ContentToQueue {
  readonly id: string;
  readonly endpointId: Types.ObjectId;
  readonly userId: Types.ObjectId;
  readonly alertIds: readonly Types.ObjectId[];
  readonly content: SentContent;
}

/**
 * The deliveries of the accounts' alerts: what a batch's changes fire becomes one job per endpoint
 * and change, recorded first; undelivered ones can be replayed; an alert's records are listed.
 */
export class Deliveries {
  /** The records of every delivery (GET /api/deliveries, replays, the attempts' outcomes). */
  readonly records: DeliveryRecords;
  /** What an attempt reads and writes of the alerts it delivers. */
  readonly alerts: DeliveredAlerts;
  private readonly jobs: DeliveryJobs;

  constructor(private readonly deps: DeliveriesDeps) {
    this.records = deps.records;
    this.alerts = deps.alerts;
    this.jobs = deps.jobs;
  }

  /**
   * The alerts the changes fire (rules/firing.ts), grouped by endpoint: one job per endpoint and
   * change, listing every alert it fired there, or held for its endpoint's digest or the end of its
   * quiet hours (held.ts, sent by digests.ts). A disabled endpoint gets none. The reads go at once;
   * nothing is recorded or queued before `after` resolves (the changes' history points are
   * written). The records come first, so an attempt always finds its record; a batch that fails
   * after them is retried, and BullMQ adds each job id once.
   */
  async enqueueFor(changes: readonly ProductChange[], after: Promise<void> = Promise.resolve()): Promise<number> {
    return this.queueFired(await this.deps.firing.fire(changes, after), after);
  }

  /**
   * An alert posted with fire_on_create: when its condition already holds on the product's current
   * point, one delivery of that point (rules/firing.ts, `fireOnCreate`). Answers how many
   * deliveries were queued (0 or 1).
   */
  async enqueueOnCreate(alert: Alert): Promise<number> {
    const fired = await this.deps.firing.fireOnCreate(alert);
    return fired ? this.queueFired([fired], Promise.resolve()) : 0;
  }

  /** The alert's deliveries, newest first; null when the account has no such alert. */
  async forAlert(userId: Types.ObjectId, alertId: string, page: PageRequest): Promise<Page<DeliveryRecord> | null> {
    const view = await this.deps.rules.find(userId, alertId);
    if (!view) return null;
    return this.records.forAlert(view.alert._id, page);
  }

  /** Queues the deliveries of fired alerts: one per endpoint and change. */
  private async queueFired(fired: readonly Fired[], after: Promise<void>): Promise<number> {
    if (fired.length === 0) return 0;
    const endpointOf = await this.endpointsOf(fired.map((f) => f.alert));
    const groups = new Map<string, { change: ProductChange; endpoint: Endpoint; alerts: Alert[] }>();
    for (const { change, alert } of fired) {
      const endpoint = endpointOf.get(alert._id.toHexString());
      if (!endpoint || endpoint.disabled_at) continue;
      const id = deliveryJobId(endpoint._id.toHexString(), change);
      const group = groups.get(id) ?? { change, endpoint, alerts: [] };
      group.alerts.push(alert);
      groups.set(id, group);
    }
    if (groups.size === 0) return 0;
    const weights = await this.weightsOf([...groups.values()].map((g) => g.endpoint.user_id.toHexString()));
    await after;
    // Each fired alert's number for its product, once the points are written: a change queued again
    // gets the number it had (the counter remembers its key), so retries and replays repeat it.
    const fires = [...groups.values()].flatMap(({ change, alerts }) =>
      alerts.map((a) => ({ alertId: a._id, country: change.country, asin: change.asin, key: change.key })),
    );
    const numbers = await this.deps.sequences.assign(fires);
    let n = 0;
    const outgoing = [...groups].map(([id, { change, endpoint, alerts }]) => ({
      endpoint,
      delivery: {
        id,
        endpointId: endpoint._id,
        userId: endpoint.user_id,
        alertIds: alerts.map((a) => a._id),
        content: deliveryContentSchema.parse({
          endpoint_id: endpoint._id.toHexString(),
          user_id: endpoint.user_id.toHexString(),
          alerts: alerts.map((a) => ({ id: a._id.toHexString(), kind: a.kind, ...thresholdOf(a), sequence: numbers[n++]! })),
          asin: change.asin,
          country: change.country,
          before: change.before ? toPoint(change.before) : null,
          after: toPoint(change.after),
        }),
      } satisfies ContentToQueue,
    }));
    await this.queueContents(await this.holdForDigests(outgoing), weights);
    return outgoing.length;
  }

  /**
   * Holds the deliveries whose endpoint takes digests, or is in its quiet hours in its account's
   * zone (digest-schedule.ts); answers the others, to queue now.
   */
  private async holdForDigests(fired: readonly { endpoint: Endpoint; delivery: ContentToQueue }[]): Promise<ContentToQueue[]> {
    const now = this.deps.now();
    const waiting = fired.filter(({ endpoint }) => endpoint.delivery !== undefined && endpoint.delivery !== 'instant');
    const quiet = fired.filter(({ endpoint }) => endpoint.quiet_hours);
    if (waiting.length === 0 && quiet.length === 0) return fired.map((f) => f.delivery);
    const zones = await this.deps.held.zonesOf(
      fired.map((f) => f.endpoint.user_id),
      this.deps.config.timeZone,
    );
    const instant: ContentToQueue[] = [];
    const held = [];
    for (const { endpoint, delivery } of fired) {
      const settings = digestSettingsOf(endpoint);
      const zone = zones.get(endpoint.user_id.toHexString()) ?? this.deps.config.timeZone;
      if (!holds(settings, zone, now)) instant.push(delivery);
      else held.push({ ...delivery, payload: delivery.content, firedAt: now, dueAt: dueAt(settings, zone, now) });
    }
    await this.deps.held.hold(held);
    return instant;
  }

  /**
   * Queues deliveries or digests now: records first, so an attempt always finds its record; a
   * batch that fails after them is retried, and BullMQ adds each job id once.
   */
  async queueContents(list: readonly ContentToQueue[], known?: ReadonlyMap<string, number>): Promise<void> {
    if (list.length === 0) return;
    const weights = known ?? (await this.weightsOf(list.map((q) => q.userId.toHexString())));
    const added = await this.records.recordQueued(list.map((q) => ({ ...q, payload: q.content })));
    await this.jobs.addBulk(await Promise.all(list.map((q) => this.job(q.id, q.content, weights))));
    // Housekeeping: a failure here must not fail the refresh batch that found the changes.
    await this.trim(added).catch((err: Error) => this.deps.logger.warn({ err: { message: err.message } }, 'delivery records not trimmed'));
  }

  /**
   * Queues a delivery that ended undelivered again, now, with a fresh retry schedule and the same
   * webhook-id. Answers null when the account has no such delivery or it is not replayable as it
   * stands (the route tells which); the caller checked its endpoint is enabled.
   */
  async replay(userId: Types.ObjectId, id: string): Promise<Claimed | null> {
    const claimed = await this.records.claim(userId, id);
    if (!claimed) return null;
    await this.requeue([claimed], userId);
    return claimed;
  }

  /**
   * Queues again up to REPLAY_LIMIT of the account's undelivered deliveries (of one endpoint, or of
   * every enabled one), oldest first. Answers how many, and whether more remain.
   */
  async replayMany(userId: Types.ObjectId, opts: { endpointId?: Types.ObjectId; skipEndpoints: readonly Types.ObjectId[] }) {
    const claimed = await this.records.claimMany(userId, { ...opts, limit: REPLAY_LIMIT });
    if (claimed.length) await this.requeue(claimed, userId);
    return { replayed: claimed.length, more: await this.records.anyReplayable(userId, opts) };
  }

  /**
   * Queues claimed deliveries. When Redis refuses, they go back to `failed` (they were failed or
   * gone), so a replay can take them again rather than leaving them pending with no job.
   */
  private async requeue(claimed: readonly Claimed[], userId: Types.ObjectId): Promise<void> {
    try {
      const weights = await this.weightsOf([userId.toHexString()]);
      await this.jobs.addBulk(await Promise.all(claimed.map((c) => this.replayJob(c, weights))));
    } catch (err) {
      await this.records.unclaim(claimed.map((c) => c.record._id));
      throw err;
    }
  }

  private async replayJob(c: Claimed, weights: ReadonlyMap<string, number>): Promise<DeliveryJob> {
    const content = sentContentSchema.parse(c.payload);
    return this.job(`${c.record._id}.r${c.record.replays ?? 1}`, content, weights, c.record._id);
  }

  /** Each account's weight, read once per batch (a batch may hold hundreds of one account's jobs). */
  private async weightsOf(userIds: readonly string[]): Promise<Map<string, number>> {
    const unique = [...new Set(userIds)];
    return new Map(await Promise.all(unique.map(async (u) => [u, await this.deps.weights.of(u)] as const)));
  }

  /** A job at its account's fair start tag; attempts, backoff and retention are the queue's defaults. */
  private async job(jobId: string, content: SentContent, weights: ReadonlyMap<string, number>, deliveryId?: string): Promise<DeliveryJob> {
    const t = await this.deps.fair.tag(DELIVERIES_LANE, content.user_id, weights.get(content.user_id) ?? 1, this.jobs.waiting);
    const fields = { ...content, tag: t.tag, ...(deliveryId ? { delivery_id: deliveryId } : {}) };
    const data = isDigest(content) ? digestPayloadSchema.parse(fields) : deliveryPayloadSchema.parse(fields);
    return { jobId, data, priority: t.priority };
  }

  /** Each fired alert's endpoint: alerts of before endpoints move to theirs first. */
  private async endpointsOf(alerts: readonly Alert[]): Promise<Map<string, Endpoint>> {
    const byAlert = new Map<string, Endpoint>();
    const known = await this.deps.endpoints.byIds(alerts.flatMap((a) => (a.endpoint_id ? [a.endpoint_id] : [])));
    for (const a of new Map(alerts.map((x) => [x._id.toHexString(), x])).values()) {
      const endpoint = a.endpoint_id ? known.get(a.endpoint_id.toHexString()) : await this.deps.endpoints.adopt(a);
      if (endpoint) byAlert.set(a._id.toHexString(), endpoint);
    }
    return byAlert;
  }

  /** Endpoints over DELIVERY_RECORDS_PER_ENDPOINT by their count lose their oldest records. */
  private async trim(added: ReadonlyMap<string, number>): Promise<void> {
    const max = this.deps.config.alerts.recordsPerEndpoint;
    for (const [hex, n] of added) {
      const id = new Types.ObjectId(hex);
      if ((await this.deps.endpoints.health.addRecords(id, n)) <= max) continue;
      await this.deps.endpoints.health.setRecordCount(id, await this.records.trim(id, max));
    }
  }
}
