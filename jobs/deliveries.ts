import { Queue, UnrecoverableError as BullUnrecoverable, type Job, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Config } from '../config/env.js';
import { WEBHOOK_MAX_RESPONSE_BYTES } from '../config/alerts.js';
import { countrySchema } from '../src/catalog/identifiers.js';
import { availabilitySchema } from '../src/catalog/product.js';
import { presentPoint, type ProductChange } from '../src/catalog/history.js';
import type { Logger } from '../src/logger.js';
import type { Metrics } from '../src/metrics/registry.js';
import { ALERT_KINDS } from '../src/models/alert.js';
import type { Alert, AlertService } from '../src/alerts/service.js';
import { firesOn } from '../src/alerts/triggers.js';
import type { WebhookPayload } from '../src/alerts/present.js';
import { sendWebhook } from '../src/alerts/send-webhook.js';
import { InvalidJobPayloadError, WebhookDeliveryError, WebhookGoneError } from '../src/errors/index.js';
import { OBJECT_ID_RE } from '../src/db/mongo.js';

/**
 * Alert deliveries: one BullMQ job per alert and change on a queue of their own, apart from every
 * upstream queue, so a slow receiver never holds a refresh and a refresh backlog never holds a
 * webhook. Producer (DeliveryQueue) and worker (runDelivery) parse the same payload schema.
 */
export const DELIVERIES_QUEUE = 'deliveries';
export const DELIVERY_JOB = 'deliver';

const pointSchema = z.object({
  at: z.number().int(),
  price: z.number().int().nullable(),
  currency: z.string().nullable(),
  availability: availabilitySchema,
  buybox: z.boolean(),
  rank: z.number().int().nullable(),
});

export const deliveryPayloadSchema = z.object({
  alert_id: z.string().regex(OBJECT_ID_RE),
  kind: z.enum(ALERT_KINDS),
  asin: z.string(),
  country: countrySchema,
  before: pointSchema.nullable(),
  after: pointSchema,
});
export type DeliveryPayload = z.output<typeof deliveryPayloadSchema>;

/** One alert and one change make one delivery: BullMQ adds a job id once, and the record is keyed by it. */
export function deliveryJobId(alertId: string, change: Pick<ProductChange, 'key'>): string {
  return `${alertId}.${change.key}`;
}

const toPoint = (p: NonNullable<ProductChange['before']>) => ({ ...p, at: p.at.getTime() });

export function deliveryJobOptions(config: Pick<Config, 'alerts'>): JobsOptions {
  return {
    attempts: config.alerts.attempts,
    backoff: { type: 'exponential', delay: config.alerts.retryBaseMs },
    // Kept past the retry span, so a change seen again within it still finds its job id taken.
    removeOnComplete: { age: 2 * 86_400 },
    removeOnFail: { age: 7 * 86_400, count: 10_000 },
  };
}

/** Adds the deliveries a batch's changes call for. Built on the api's fail-fast connection, like JobProducer. */
export class DeliveryQueue {
  readonly queue: Queue;

  constructor(
    connection: Redis,
    prefix: string,
    logger: Logger,
    private readonly alerts: AlertService,
    config: Pick<Config, 'alerts'>,
  ) {
    this.queue = new Queue(DELIVERIES_QUEUE, { connection, prefix, defaultJobOptions: deliveryJobOptions(config) });
    this.queue.on('error', (err) => logger.warn({ err: { message: err.message }, queue: DELIVERIES_QUEUE }, 'queue error'));
  }

  /** The alerts on the changed products (one query), and a job for each alert a change fires. */
  async enqueueFor(changes: readonly ProductChange[]): Promise<number> {
    const byCountry = new Map<ProductChange['country'], ProductChange[]>();
    for (const c of changes) byCountry.set(c.country, [...(byCountry.get(c.country) ?? []), c]);
    const jobs: { name: string; data: DeliveryPayload; opts: JobsOptions }[] = [];
    const records: { id: string; alert: Alert }[] = [];
    for (const [country, list] of byCountry) {
      const alerts = await this.alerts.activeOn(country, [...new Set(list.map((c) => c.asin))]);
      for (const change of list) {
        for (const alert of alerts) {
          if (alert.asin !== change.asin || !firesOn(alert, change)) continue;
          const id = deliveryJobId(alert._id.toHexString(), change);
          const data = deliveryPayloadSchema.parse({
            alert_id: alert._id.toHexString(),
            kind: alert.kind,
            asin: change.asin,
            country,
            before: change.before ? toPoint(change.before) : null,
            after: toPoint(change.after),
          });
          // Attempts, backoff and retention are the queue's defaults (deliveryJobOptions).
          jobs.push({ name: DELIVERY_JOB, data, opts: { jobId: id } });
          records.push({ id, alert });
        }
      }
    }
    if (jobs.length === 0) return 0;
    await this.queue.addBulk(jobs);
    await this.alerts.recordQueued(records);
    return jobs.length;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

export interface DeliveryDeps {
  readonly config: Pick<Config, 'alerts' | 'timeZone'>;
  readonly alerts: AlertService;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

/** The webhook's body: the points as the history route answers them. */
export function webhookBody(data: DeliveryPayload, timeZone: string): WebhookPayload {
  const point = (p: z.output<typeof pointSchema>) => presentPoint({ ...p, at: new Date(p.at) }, timeZone);
  return {
    alert_id: data.alert_id,
    kind: data.kind,
    asin: data.asin,
    country: data.country,
    before: data.before ? point(data.before) : null,
    after: point(data.after),
  };
}

/**
 * One attempt of a delivery. A 2xx acknowledges; 410 disables the alert and ends the delivery;
 * anything else fails the attempt, and BullMQ retries with exponential backoff within a day. A
 * delivery whose alert was deleted or disabled meanwhile ends without a request.
 */
export async function runDelivery(deps: DeliveryDeps, job: Job): Promise<{ status: number } | { skipped: string }> {
  const parsed = deliveryPayloadSchema.safeParse(job.data);
  if (!parsed.success) throw new BullUnrecoverable(new InvalidJobPayloadError(`delivery payload: ${parsed.error.message}`).message);
  const data = parsed.data;
  const target = await deps.alerts.forDelivery(data.alert_id);
  if (!target) {
    deps.metrics.deliveries.inc({ outcome: 'skipped' });
    return { skipped: 'the alert was deleted or disabled' };
  }
  const id = job.id!;
  const attempts = job.attemptsMade + 1;
  const last = attempts >= (job.opts.attempts ?? 1);
  let status: number | null = null;
  try {
    const answer = await sendWebhook({
      url: target.alert.webhook_url,
      secret: target.secret,
      id,
      timestamp: new Date(),
      body: JSON.stringify(webhookBody(data, deps.config.timeZone)),
      timeoutMs: deps.config.alerts.timeoutMs,
      maxResponseBytes: WEBHOOK_MAX_RESPONSE_BYTES,
      allowPrivate: deps.config.alerts.allowPrivate,
    });
    status = answer.status;
    if (status >= 200 && status < 300) {
      await deps.alerts.recordAttempt(id, target.alert, { status: 'delivered', attempts, responseCode: status, error: null });
      deps.metrics.deliveries.inc({ outcome: 'delivered' });
      return { status };
    }
    if (status === 410) throw new WebhookGoneError('the receiver answered 410 Gone: the alert is disabled');
    throw new WebhookDeliveryError(`the receiver answered ${status}`, status);
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    if (error instanceof WebhookGoneError) {
      await deps.alerts.disable(data.alert_id, 'the receiver answered 410 Gone');
      await deps.alerts.recordAttempt(id, target.alert, { status: 'gone', attempts, responseCode: 410, error: error.message });
      deps.metrics.deliveries.inc({ outcome: 'gone' });
      throw new BullUnrecoverable(error.message);
    }
    const code = error instanceof WebhookDeliveryError ? error.status : status;
    await deps.alerts.recordAttempt(id, target.alert, {
      status: last ? 'failed' : 'pending',
      attempts,
      responseCode: code,
      error: error.message,
    });
    deps.metrics.deliveries.inc({ outcome: last ? 'failed' : 'retry' });
    deps.logger.warn({ delivery: id, attempt: attempts, err: { name: error.name, message: error.message } }, 'webhook delivery failed');
    throw error;
  }
}
