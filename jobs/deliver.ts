import { UnrecoverableError as BullUnrecoverable, type JobsOptions } from 'bullmq';
import { z } from 'zod';
import { Types } from 'mongoose';
import type { Config } from '../config/env.js';
import type { Logger } from '../src/logger.js';
import type { Metrics } from '../src/core/metrics.js';
import type { Endpoints } from '../src/alerts/endpoints/endpoints.js';
import type { Deliveries } from '../src/alerts/deliveries/service.js';
import { webhookBody } from '../src/alerts/deliveries/present.js';
import type { HostResolver } from '../src/alerts/deliveries/send-webhook.js';
import { sendOnChannel } from '../src/alerts/deliveries/channels/dispatch.js';
import type { FairTags } from '../src/fairness/fair-tags.js';
import { EmailDeliveryError, EmailNotSentError, WebhookDeliveryError, WebhookGoneError } from '../src/core/errors.js';
import type { EmailAddresses } from '../src/alerts/endpoints/email-addresses.js';
import {
  alertIdsOf,
  DELIVERIES_LANE,
  deliveryPayloadSchema,
  digestPayloadSchema,
  legacyPayloadSchema,
  type DeliveryPayload,
  type DigestPayload,
  type LegacyPayload,
  type SentContent,
} from '../src/alerts/deliveries/payload.js';
import { DELIVERY_DB_TIMEOUT_MS, DELIVERY_MAX_RETRY_AFTER_MS } from '../config/alerts.js';
import { defineGlobalJob, type JobAttempt } from './kind.js';
import { DELIVERIES_QUEUE } from './queue-names.js';

export interface DeliveryDeps {
  readonly config: Pick<Config, 'alerts' | 'timeZone'>;
  readonly endpoints: Endpoints;
  readonly deliveries: Pick<Deliveries, 'records' | 'alerts'>;
  readonly fair: FairTags;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** The clock of failure spans, disables and events; tests move it to see days pass. */
  readonly now?: () => Date;
  /** Tests: where webhook hosts resolve at connection time (the account's HostLookups otherwise). */
  readonly resolve?: HostResolver;
  /** The e-mail addresses' consent, caps and bounces; without it no e-mail is sent. */
  readonly emailAddresses?: EmailAddresses;
}

export type DeliveryOutcome = { status: number } | { skipped: string };

/** The webhook's body (src/alerts/deliveries/present.ts, where the test delivery builds it too). */
export { webhookBody };

/** What a job sends: a delivery's content and id, or why there is nothing to send. */
type Target = { readonly content: SentContent; readonly tag: number | null } | { readonly skipped: string };

/**
 * A delivery's job: one change's content, a digest of held ones (src/alerts/deliveries/digests.ts),
 * or a job queued before endpoints existed, which names one alert.
 */
const jobPayloadSchema = z.union([digestPayloadSchema, deliveryPayloadSchema, legacyPayloadSchema]);
type JobPayload = DigestPayload | DeliveryPayload | LegacyPayload;

/**
 * The job's payload as a delivery's content. A job queued before endpoints existed names one alert:
 * its alert moves to its endpoint (src/alerts/endpoints/endpoints.ts, `adopt`), which then signs and takes the failures.
 */
async function targetOf(deps: DeliveryDeps, data: JobPayload): Promise<Target> {
  if ('endpoint_id' in data) {
    const { tag, delivery_id: _d, ...content } = data;
    return { content, tag };
  }
  const alert = await deps.deliveries.alerts.legacy(data.alert_id);
  const endpoint = alert ? await deps.endpoints.adopt(alert) : null;
  if (!alert || !endpoint) return { skipped: 'the alert was deleted or disabled' };
  const { alert_id, kind, ...change } = data;
  const content = {
    ...change,
    endpoint_id: endpoint._id.toHexString(),
    user_id: alert.user_id.toHexString(),
    alerts: [{ id: alert_id, kind }],
  };
  return { content, tag: null };
}

/**
 * One attempt of a delivery, on its endpoint's channel (src/alerts/deliveries/channels/dispatch.ts). A 2xx
 * (an accepted e-mail) acknowledges and clears the endpoint's failure span; 410 (a chat service's
 * "no such webhook", or "bad token") disables the endpoint and ends the delivery; anything else fails the attempt,
 * and BullMQ retries on DELIVERY_RETRY_SCHEDULE (waiting longer when a 429 asked to), unless this failure disabled the endpoint (failing
 * for longer than ENDPOINT_DISABLE_AFTER). A delivery whose endpoint is disabled, or whose alerts
 * were all deleted, meanwhile ends without a request (its record says so; a replay can send it later).
 * So does an e-mail the address gate refused (not confirmed, a daily cap: src/alerts/endpoints/email-addresses.ts),
 * without touching the endpoint's health; a permanent SMTP refusal fails at once and counts toward
 * the address's bouncing.
 */
export async function runDelivery(deps: DeliveryDeps, data: JobPayload, job: JobAttempt): Promise<DeliveryOutcome> {
  const now = deps.now ?? (() => new Date());
  const target = await targetOf(deps, data);
  const id = ('delivery_id' in data ? data.delivery_id : undefined) ?? job.id;
  const skip = async (why: string): Promise<DeliveryOutcome> => {
    await deps.deliveries.records.failIfPending(id, `not sent: ${why}`);
    deps.metrics.deliveries.inc({ outcome: 'skipped' });
    return { skipped: why };
  };
  if ('skipped' in target) return skip(target.skipped);
  const { content, tag } = target;
  // The lane's virtual time moves to this job's tag: an account idle until now queues from here.
  if (tag !== null)
    await deps.fair.started(DELIVERIES_LANE, tag).catch((err: Error) => deps.logger.warn({ err: { message: err.message } }, 'fair tag'));

  const found = await deps.endpoints.health.forDelivery(new Types.ObjectId(content.endpoint_id));
  if (!found) return skip('the endpoint no longer exists');
  const { endpoint } = found;
  if (found.unusable) return skip(`the endpoint is unusable: ${found.unusable}`);
  if (endpoint.disabled_at) return skip(`the endpoint is disabled (${endpoint.disabled_reason ?? 'no reason'}); enable it and replay`);
  const alertIds = alertIdsOf(content).map((a) => new Types.ObjectId(a));
  if ((await deps.deliveries.alerts.live(alertIds)).length === 0) return skip('its alerts were deleted or disabled');

  const attempts = job.attempt;
  const last = attempts >= job.attempts;
  let status: number | null = null;
  try {
    const answer = await sendOnChannel(
      {
        channel: found.channel,
        target: found.target,
        secrets: found.secrets,
        id,
        content,
        test: false,
        product: (country, asin) => deps.deliveries.alerts.productLabel(country, asin),
      },
      { config: deps.config, resolve: deps.resolve ?? deps.endpoints.lookups.forAccount(content.user_id), mail: deps.emailAddresses },
    );
    status = answer.status;
    if (answer.verdict === 'ok') {
      const at = now();
      if (found.channel === 'email') await deps.emailAddresses?.recordAccepted(content.user_id, found.target);
      await deps.deliveries.records.recordAttempt(id, { status: 'delivered', attempts, responseCode: status, error: null }, at);
      await deps.endpoints.health.recordSuccess(endpoint._id, at);
      await deps.deliveries.alerts.stampDelivered(alertIds, at);
      deps.metrics.deliveries.inc({ outcome: 'delivered' });
      return { status };
    }
    const reason = answer.reason ?? `the receiver answered ${status}`;
    if (answer.verdict === 'gone') throw new WebhookGoneError(reason);
    throw new WebhookDeliveryError(reason, status, { retryAfterMs: answer.retryAfterMs ?? null });
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    // Not offered to the SMTP server at all: the receiver did not fail, so the endpoint's health stays.
    if (error instanceof EmailNotSentError) return skip(error.message);
    if (error instanceof WebhookGoneError) {
      await deps.endpoints.health.recordGone(endpoint, now(), error.reason);
      await deps.deliveries.records.recordAttempt(id, { status: 'gone', attempts, responseCode: status, error: error.message }, now());
      deps.metrics.deliveries.inc({ outcome: 'gone' });
      throw new BullUnrecoverable(error.message);
    }
    const disabled = await deps.endpoints.health.recordFailure(endpoint, now(), deps.config.alerts.disableAfterMs);
    // A 5xx to RCPT TO or DATA refuses the same mail again on every retry: it fails now, and counts toward bouncing.
    const permanent = error instanceof EmailDeliveryError && error.permanent;
    const bounced = permanent && (await deps.emailAddresses?.recordBounce(content.user_id, found.target)) === true;
    const final = last || disabled !== null || permanent;
    await deps.deliveries.records.recordAttempt(
      id,
      {
        status: final ? 'failed' : 'pending',
        attempts,
        responseCode: error instanceof WebhookDeliveryError ? error.status : status,
        error: [
          error.message,
          ...(permanent ? ['a permanent refusal: not retried'] : []),
          ...(bounced ? ['the address is now bounced (EMAIL_BOUNCE_LIMIT)'] : []),
          ...(disabled ? [`the endpoint is now disabled: ${disabled}`] : []),
        ].join('; '),
      },
      now(),
    );
    deps.metrics.deliveries.inc({ outcome: final ? 'failed' : 'retry' });
    deps.logger.warn(
      { delivery: id, channel: found.channel, attempt: attempts, err: { name: error.name, message: error.message } },
      'webhook delivery failed',
    );
    if (disabled || permanent) throw new BullUnrecoverable(error.message);
    throw error;
  }
}

/** BullMQ's backoff type for the DELIVERY_RETRY_SCHEDULE strategy the worker carries. */
export const DELIVERY_BACKOFF = 'webhook-schedule';

/**
 * The BullMQ backoff of DELIVERY_RETRY_SCHEDULE: the delay before retry k is the schedule's k-th,
 * or longer when the attempt's receiver asked for a longer wait (a 429's Retry-After, Telegram's
 * `retry_after`: BullMQ hands the strategy the attempt's error), up to DELIVERY_MAX_RETRY_AFTER_MS.
 * The wait never adds an attempt: past the schedule there is no retry.
 */
export function deliveryBackoff(schedule: readonly number[]) {
  return (attemptsMade: number, _type?: unknown, err?: unknown): number => {
    const scheduled = schedule[attemptsMade - 1] ?? -1;
    const asked = err instanceof WebhookDeliveryError ? err.retryAfterMs : null;
    if (scheduled < 0 || asked === null) return scheduled;
    return Math.max(scheduled, Math.min(asked, DELIVERY_MAX_RETRY_AFTER_MS));
  };
}

export function deliveryJobOptions(config: Pick<Config, 'alerts'>): JobsOptions {
  const spanMs = config.alerts.retryScheduleMs.reduce((a, b) => a + b, 0);
  return {
    attempts: config.alerts.attempts,
    backoff: { type: DELIVERY_BACKOFF },
    // Kept past the retry span, so a change seen again within it still finds its job id taken.
    removeOnComplete: { age: Math.ceil(Math.max(2 * 86_400_000, spanMs + 86_400_000) / 1_000) },
    removeOnFail: { age: 7 * 86_400, count: 10_000 },
  };
}

/**
 * A delivery: one endpoint and one change, on the deliveries' queue of every country. Jobs are
 * queued fairly between accounts (src/alerts/deliveries/service.ts): each gets its account's start tag
 * in the `deliveries` lane as its BullMQ priority. DELIVERY_CONCURRENCY attempts at once per process
 * (each mostly waits on a receiver), retried on DELIVERY_RETRY_SCHEDULE.
 */
export const deliveryJob = defineGlobalJob({
  name: 'deliver',
  queue: DELIVERIES_QUEUE,
  noun: 'delivery',
  payload: jobPayloadSchema,
  jobOptions: deliveryJobOptions,
  worker: (config: Pick<Config, 'alerts'>) => ({
    concurrency: config.alerts.concurrency,
    backoff: deliveryBackoff(config.alerts.retryScheduleMs),
    // An attempt is bounded by DELIVERY_TIMEOUT and MongoDB's own timeouts; the cut-off only matters
    // when the drain runs out of time (BullMQ's cancel signal), so it gets the attempt's bound as deadline.
    attemptMs: config.alerts.timeoutMs + 2 * DELIVERY_DB_TIMEOUT_MS + 5_000,
  }),
  run: runDelivery,
  // A last attempt can end before it recorded itself (a MongoDB write past its deadline): its
  // record must not stay `pending` for ever, or a replay would never take it.
  async onFinalFailure(deps: DeliveryDeps, job, err) {
    const id = (job.data as { delivery_id?: string } | undefined)?.delivery_id ?? job.id;
    if (id) await deps.deliveries.records.failIfPending(id, err.message);
  },
});
