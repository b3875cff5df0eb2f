import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from '../db/redis.js';
import { Types } from 'mongoose';
import { z } from 'zod';
import type { Config } from '../../config/env.js';
import { countrySchema } from '../core/identifiers.js';
import { availabilitySchema } from '../core/product.js';
import type { ProductChange } from '../catalog/history.js';
import type { Logger } from '../logger.js';
import { ALERT_KINDS } from '../models/alert.js';
import type { Alert, AlertService } from './service.js';
import type { Endpoint } from './endpoints.js';
import type { Claimed, QueuedDelivery } from './delivery-records.js';
import { holdsNow, judge, rearms, sameState, stateOf, type ArmState } from './triggers.js';
import type { FairTags } from '../fairness/fair-tags.js';
import type { AccountWeights } from '../accounts/weights.js';
import { OBJECT_ID_RE } from '../db/mongo.js';
import { sharedTag } from '../db/redis-keys.js';

/**
 * Webhook deliveries: one BullMQ job per endpoint and change on a queue of their own, apart from
 * every upstream queue, so a slow receiver never holds a refresh and a refresh backlog never holds
 * a webhook. Jobs are queued fairly between accounts: each gets its account's start tag in the
 * `deliveries` lane as its BullMQ priority (src/fairness/fair-tags.ts), so one account's backlog
 * to a slow receiver delays another account's new delivery by about one attempt, not by the
 * backlog. Producer (DeliveryQueue) and worker (jobs/deliver.ts) parse the same payload schema.
 */
export const DELIVERIES_QUEUE = 'deliveries';

/** BullMQ's prefix for the deliveries' queue: a hash tag of its own, apart from every country's. */
export function deliveriesPrefix(prefix: string): string {
  return sharedTag(prefix, 'deliveries');
}
export const DELIVERY_JOB = 'deliver';
/** The fair-queuing lane of the deliveries (one for every process and country). */
export const DELIVERIES_LANE = 'deliveries';
/** BullMQ's backoff type for the DELIVERY_RETRY_SCHEDULE strategy the worker carries. */
export const WEBHOOK_BACKOFF = 'webhook-schedule';
/** Deliveries one bulk replay queues at most. */
export const REPLAY_LIMIT = 1_000;

const objectId = z.string().regex(OBJECT_ID_RE);

const pointSchema = z.object({
  at: z.number().int(),
  price: z.number().int().nullable(),
  currency: z.string().nullable(),
  availability: availabilitySchema,
  buybox: z.boolean(),
  rank: z.number().int().nullable(),
});
export type PayloadPoint = z.output<typeof pointSchema>;

/** What a delivery says, as its record keeps it for a replay. */
export const deliveryContentSchema = z.object({
  endpoint_id: objectId,
  user_id: objectId,
  /** The alerts the change fired at the endpoint, in creation order; several may share a kind (other thresholds, same target). */
  alerts: z
    .array(
      z.object({
        id: objectId,
        kind: z.enum(ALERT_KINDS),
        /**
         * What tells alerts of one kind apart in a message to a person (channels/message.ts):
         * price_below's threshold, rank_below / rank_above's rank. Absent on deliveries queued before.
         */
        price: z.number().int().optional(),
        rank: z.number().int().optional(),
        /**
         * The event's number for this alert and product (sequences.ts), assigned when it was queued;
         * absent on deliveries queued before numbers existed.
         */
        sequence: z.number().int().positive().optional(),
      }),
    )
    .min(1),
  asin: z.string(),
  country: countrySchema,
  before: pointSchema.nullable(),
  after: pointSchema,
});
export type DeliveryContent = z.output<typeof deliveryContentSchema>;

/** A job: the content, its fair start tag, and for a replay the delivery it sends again. */
export const deliveryPayloadSchema = deliveryContentSchema.extend({
  tag: z.number().nonnegative(),
  /** A replay's job id differs from the delivery's; this is the delivery's id and webhook-id. */
  delivery_id: z.string().min(1).optional(),
});
export type DeliveryPayload = z.output<typeof deliveryPayloadSchema>;

/** A job queued before endpoints existed: one alert, no endpoint, no tag. */
export const legacyPayloadSchema = z.object({
  alert_id: objectId,
  kind: z.enum(ALERT_KINDS),
  asin: z.string(),
  country: countrySchema,
  before: pointSchema.nullable(),
  after: pointSchema,
});
export type LegacyPayload = z.output<typeof legacyPayloadSchema>;

/** One endpoint and one change make one delivery: BullMQ adds a job id once, and the record is keyed by it. */
export function deliveryJobId(endpointId: string, change: Pick<ProductChange, 'key'>): string {
  return `${endpointId}.${change.key}`;
}

const toPoint = (p: NonNullable<ProductChange['before']>): PayloadPoint => ({ ...p, at: p.at.getTime() });

/** The option that tells a fired alert from others of its kind, as the delivery's content carries it. */
export function thresholdOf(a: Pick<Alert, 'kind' | 'price' | 'rank'>): { price?: number; rank?: number } {
  if (a.kind === 'price_below' && a.price !== null) return { price: a.price };
  if ((a.kind === 'rank_below' || a.kind === 'rank_above') && typeof a.rank === 'number') return { rank: a.rank };
  return {};
}

/** The BullMQ backoff of DELIVERY_RETRY_SCHEDULE: the delay before retry k is the schedule's k-th. */
export function webhookBackoff(schedule: readonly number[]) {
  return (attemptsMade: number): number => schedule[attemptsMade - 1] ?? -1;
}

export function deliveryJobOptions(config: Pick<Config, 'alerts'>): JobsOptions {
  const spanMs = config.alerts.retryScheduleMs.reduce((a, b) => a + b, 0);
  return {
    attempts: config.alerts.attempts,
    backoff: { type: WEBHOOK_BACKOFF },
    // Kept past the retry span, so a change seen again within it still finds its job id taken.
    removeOnComplete: { age: Math.ceil(Math.max(2 * 86_400_000, spanMs + 86_400_000) / 1_000) },
    removeOnFail: { age: 7 * 86_400, count: 10_000 },
  };
}

interface Job {
  readonly name: string;
  readonly data: DeliveryPayload;
  readonly opts: JobsOptions;
}

/** Adds the deliveries a batch's changes call for, and replays. Built on the api's fail-fast connection, like JobProducer. */
export class DeliveryQueue {
  readonly queue: Queue;

  constructor(
    connection: Redis,
    prefix: string,
    private readonly logger: Logger,
    private readonly alerts: AlertService,
    private readonly config: Pick<Config, 'alerts'>,
    private readonly fair: FairTags,
    private readonly weights: AccountWeights,
  ) {
    this.queue = new Queue(DELIVERIES_QUEUE, {
      connection,
      prefix: deliveriesPrefix(prefix),
      defaultJobOptions: deliveryJobOptions(config),
    });
    this.queue.on('error', (err) => logger.warn({ err: { message: err.message }, queue: DELIVERIES_QUEUE }, 'queue error'));
  }

  /**
   * The alerts on the changed products (one query per country), grouped by endpoint: one job per
   * endpoint and change, listing every alert it fired there. A disabled endpoint gets none. The
   * reads go at once; nothing is recorded or queued before `after` resolves (the changes' history
   * points are written). The records come first, so an attempt always finds its record; a batch
   * that fails after them is retried, and BullMQ adds each job id once.
   */
  async enqueueFor(changes: readonly ProductChange[], after: Promise<void> = Promise.resolve()): Promise<number> {
    const byCountry = new Map<ProductChange['country'], ProductChange[]>();
    for (const c of changes) byCountry.set(c.country, [...(byCountry.get(c.country) ?? []), c]);
    const fired: { change: ProductChange; alert: Alert }[] = [];
    // Re-arming alerts' states, judged change after change in the batch's order; written back when changed.
    const states = new Map<string, { alert: Alert; from: ArmState; state: ArmState }>();
    for (const [country, list] of byCountry) {
      const alerts = await this.alerts.activeOn(country, [...new Set(list.map((c) => c.asin))]);
      const pairs = list.flatMap((change) => alerts.filter((a) => a.asin === change.asin).map((alert) => ({ change, alert })));
      const references = await this.alerts.referencesFor(pairs);
      for (const { change, alert } of pairs) {
        const hex = alert._id.toHexString();
        const held = states.get(hex) ?? { alert, from: stateOf(alert), state: stateOf(alert) };
        const judged = judge(alert, held.state, change, references.get(`${hex}.${change.key}`) ?? null);
        if (rearms(alert)) states.set(hex, { ...held, state: judged.state });
        if (judged.fires) fired.push({ change, alert });
      }
    }
    const changedStates = [...states.values()].filter((s) => !sameState(s.from, s.state));
    if (changedStates.length > 0) {
      await after;
      await this.alerts.saveStates(changedStates.map((s) => ({ id: s.alert._id, state: s.state })));
    }
    return this.queueFired(fired, after);
  }

  /**
   * An alert posted with fire_on_create: when its condition already holds on the product's current
   * point (its last history point, against the one before it), one delivery of that point, as a
   * change of its own (`<country>.<asin>.created.<alert id>`). Nothing when the product has no
   * point yet, or the alert is paused. Answers how many deliveries were queued (0 or 1).
   */
  async enqueueOnCreate(alert: Alert): Promise<number> {
    if (alert.paused) return 0;
    const [latest, previous] = await this.alerts.lastPoints(alert.country, alert.asin);
    if (!latest) return 0;
    const change: ProductChange = {
      country: alert.country,
      asin: alert.asin,
      key: `${alert.country}.${alert.asin}.created.${alert._id.toHexString()}`,
      before: previous ?? null,
      after: latest,
    };
    const references = await this.alerts.referencesFor([{ change, alert }]);
    if (!holdsNow(alert, change, references.get(`${alert._id.toHexString()}.${change.key}`) ?? null)) return 0;
    if (rearms(alert)) {
      await this.alerts.saveStates([{ id: alert._id, state: { armed: false, last_fired_at: latest.at, last_fired_key: change.key } }]);
    }
    return this.queueFired([{ change, alert }], Promise.resolve());
  }

  /** Queues the deliveries of fired alerts: one per endpoint and change. */
  private async queueFired(fired: readonly { change: ProductChange; alert: Alert }[], after: Promise<void>): Promise<number> {
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
    const numbers = await this.alerts.sequences.assign(fires);
    let n = 0;
    const queued: QueuedDelivery[] = [...groups].map(([id, { change, endpoint, alerts }]) => ({
      id,
      endpointId: endpoint._id,
      userId: endpoint.user_id,
      alertIds: alerts.map((a) => a._id),
      payload: deliveryContentSchema.parse({
        endpoint_id: endpoint._id.toHexString(),
        user_id: endpoint.user_id.toHexString(),
        alerts: alerts.map((a) => ({ id: a._id.toHexString(), kind: a.kind, ...thresholdOf(a), sequence: numbers[n++]! })),
        asin: change.asin,
        country: change.country,
        before: change.before ? toPoint(change.before) : null,
        after: toPoint(change.after),
      }),
    }));
    const added = await this.alerts.records.recordQueued(queued);
    await this.queue.addBulk(await Promise.all(queued.map((q) => this.job(q.id, q.payload as DeliveryContent, weights))));
    // Housekeeping: a failure here must not fail the refresh batch that found the changes.
    await this.trim(added).catch((err: Error) => this.logger.warn({ err: { message: err.message } }, 'delivery records not trimmed'));
    return queued.length;
  }

  /**
   * Queues a delivery that ended undelivered again, now, with a fresh retry schedule and the same
   * webhook-id. Answers null when the account has no such delivery or it is not replayable as it
   * stands (the route tells which); the caller checked its endpoint is enabled.
   */
  async replay(userId: Types.ObjectId, id: string): Promise<Claimed | null> {
    const claimed = await this.alerts.records.claim(userId, id);
    if (!claimed) return null;
    await this.requeue([claimed], userId);
    return claimed;
  }

  /**
   * Queues again up to REPLAY_LIMIT of the account's undelivered deliveries (of one endpoint, or of
   * every enabled one), oldest first. Answers how many, and whether more remain.
   */
  async replayMany(userId: Types.ObjectId, opts: { endpointId?: Types.ObjectId; skipEndpoints: readonly Types.ObjectId[] }) {
    const claimed = await this.alerts.records.claimMany(userId, { ...opts, limit: REPLAY_LIMIT });
    if (claimed.length) await this.requeue(claimed, userId);
    return { replayed: claimed.length, more: await this.alerts.records.anyReplayable(userId, opts) };
  }

  async close(): Promise<void> {
    await this.queue.close();
  }

  /**
   * Queues claimed deliveries. When Redis refuses, they go back to `failed` (they were failed or
   * gone), so a replay can take them again rather than leaving them pending with no job.
   */
  private async requeue(claimed: readonly Claimed[], userId: Types.ObjectId): Promise<void> {
    try {
      const weights = await this.weightsOf([userId.toHexString()]);
      await this.queue.addBulk(await Promise.all(claimed.map((c) => this.replayJob(c, weights))));
    } catch (err) {
      await this.alerts.records.unclaim(claimed.map((c) => c.record._id));
      throw err;
    }
  }

  private async replayJob(c: Claimed, weights: ReadonlyMap<string, number>): Promise<Job> {
    const content = deliveryContentSchema.parse(c.payload);
    return this.job(`${c.record._id}.r${c.record.replays ?? 1}`, content, weights, c.record._id);
  }

  /** Each account's weight, read once per batch (a batch may hold hundreds of one account's jobs). */
  private async weightsOf(userIds: readonly string[]): Promise<Map<string, number>> {
    const unique = [...new Set(userIds)];
    return new Map(await Promise.all(unique.map(async (u) => [u, await this.weights.of(u)] as const)));
  }

  /** A job at its account's fair start tag; attempts, backoff and retention are the queue's defaults. */
  private async job(jobId: string, content: DeliveryContent, weights: ReadonlyMap<string, number>, deliveryId?: string): Promise<Job> {
    const t = await this.fair.tag(DELIVERIES_LANE, content.user_id, weights.get(content.user_id) ?? 1, this.queue);
    const data = deliveryPayloadSchema.parse({ ...content, tag: t.tag, ...(deliveryId ? { delivery_id: deliveryId } : {}) });
    return { name: DELIVERY_JOB, data, opts: { jobId, priority: t.priority } };
  }

  /** Each fired alert's endpoint: alerts of before endpoints move to theirs first. */
  private async endpointsOf(alerts: readonly Alert[]): Promise<Map<string, Endpoint>> {
    const byAlert = new Map<string, Endpoint>();
    const known = await this.alerts.endpoints.byIds(alerts.flatMap((a) => (a.endpoint_id ? [a.endpoint_id] : [])));
    for (const a of new Map(alerts.map((x) => [x._id.toHexString(), x])).values()) {
      const endpoint = a.endpoint_id ? known.get(a.endpoint_id.toHexString()) : await this.alerts.endpoints.adopt(a);
      if (endpoint) byAlert.set(a._id.toHexString(), endpoint);
    }
    return byAlert;
  }

  /** Endpoints over DELIVERY_RECORDS_PER_ENDPOINT by their count lose their oldest records. */
  private async trim(added: ReadonlyMap<string, number>): Promise<void> {
    const max = this.config.alerts.recordsPerEndpoint;
    for (const [hex, n] of added) {
      const id = new Types.ObjectId(hex);
      if ((await this.alerts.endpoints.addRecords(id, n)) <= max) continue;
      await this.alerts.endpoints.setRecordCount(id, await this.alerts.records.trim(id, max));
    }
  }
}
