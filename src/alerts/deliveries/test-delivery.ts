/**
 * The test button (POST /api/alerts/{id}/test): one sample delivery to the alert's endpoint, now,
 * outside the deliveries' queue, on its channel by the same sendOnChannel (the same address guard,
 * signing and DELIVERY_TIMEOUT) as real deliveries, and the class of the receiver's answer reported back.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Types } from 'mongoose';
import type { Config } from '../../../config/env.js';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import { MARKETPLACES } from '../../../config/marketplaces.js';
import { historyPointModel } from '../../models/history-point.js';
import type { Point } from '../../catalog/history.js';
import type { Logger } from '../../logger.js';
import type { Alert } from '../rules/alert.js';
import type { AlertRules } from '../rules/service.js';
import type { Endpoints } from '../endpoints/endpoints.js';
import type { DeliveredAlerts } from './alerts.js';
import { thresholdOf, type DeliveryContent, type PayloadPoint } from './payload.js';
import type { HostResolver } from './send-webhook.js';
import { sendOnChannel } from './channels/dispatch.js';
import { testRefusalAnswer, type EmailAddresses } from '../endpoints/email-addresses.js';
import type { TestSendLimits } from './test-limits.js';
import { ConflictError, EmailNotSentError, WebhookDeliveryError, WebhookTargetRefusedError } from '../../core/errors.js';

export interface TestDeliveryDeps {
  readonly conn: Parameters<typeof historyPointModel>[0];
  readonly rules: Pick<AlertRules, 'find'>;
  readonly endpoints: Endpoints;
  readonly alerts: Pick<DeliveredAlerts, 'productLabel'>;
  readonly config: Pick<Config, 'alerts' | 'timeZone'>;
  readonly logger: Logger;
  /** How many tests may go (test-limits.ts). */
  readonly limits: TestSendLimits;
  /** Tests: where webhook hosts resolve at connection time (the account's HostLookups otherwise). */
  readonly resolve?: HostResolver;
  /** The e-mail gate (consent and daily caps); without it no test e-mail is sent. */
  readonly emailAddresses?: EmailAddresses;
}

/**
 * What class of thing happened, never what the remote said: its reply text, error messages and
 * socket errors would make the button a probe of hosts and of our network.
 * - `delivered`: a 2xx (for e-mail: the SMTP server accepted it).
 * - `refused`: the receiver answered another status (or the SMTP server refused), `status` says which.
 * - `timed_out`: no complete answer within DELIVERY_TIMEOUT.
 * - `unreachable`: no answer at all: the name did not resolve, the connection failed, or the
 *   address guard refused the target (which of these is not said).
 */
export const TEST_OUTCOMES = ['delivered', 'refused', 'timed_out', 'unreachable'] as const;
export type TestOutcome = (typeof TEST_OUTCOMES)[number];

export interface TestDeliveryResult {
  readonly outcome: TestOutcome;
  /** The HTTP status (the SMTP reply code for e-mail); null when none arrived. */
  readonly status: number | null;
  readonly ok: boolean;
  readonly durationMs: number;
  /** The outcome in our words (with the status); null when delivered. */
  readonly error: string | null;
  readonly webhookId: string;
}

const toPayload = (p: Point): PayloadPoint => ({
  at: p.at.getTime(),
  price: p.price,
  currency: p.currency,
  availability: p.availability,
  buybox: p.buybox,
  rank: p.rank,
});

/**
 * Points of a change of the alert's kind, made up: a product the service has not observed yet
 * still gets a sample of what its alert will send.
 */
function samplePoints(alert: Alert, now: Date): { before: PayloadPoint; after: PayloadPoint } {
  const base = { currency: MARKETPLACES[alert.country].currency, availability: 'in_stock' as const, buybox: true, rank: 1000 };
  const at = now.getTime();
  const before = { ...base, at: at - 3_600_000, price: 10_000 };
  switch (alert.kind) {
    case 'price_below': {
      const threshold = alert.price ?? 10_000;
      return { before: { ...before, price: threshold + 100 }, after: { ...base, at, price: Math.max(0, threshold - 100) } };
    }
    case 'price_drop': {
      const drop = alert.amount ?? Math.ceil((10_000 * (alert.percent ?? 10)) / 100);
      return { before, after: { ...base, at, price: Math.max(0, 10_000 - drop) } };
    }
    case 'price_rise': {
      const rise = alert.amount ?? Math.ceil((10_000 * (alert.percent ?? 10)) / 100);
      return { before, after: { ...base, at, price: 10_000 + rise } };
    }
    case 'back_in_stock':
      return { before: { ...before, price: null, availability: 'out_of_stock', buybox: false }, after: { ...base, at, price: 10_000 } };
    case 'out_of_stock':
      return { before, after: { ...base, at, price: null, availability: 'out_of_stock', buybox: false } };
    case 'buybox_change':
      return { before, after: { ...base, at, price: 10_500, buybox: false } };
    case 'rank_below': {
      const rank = alert.rank ?? 1000;
      return { before: { ...before, rank: rank + 100 }, after: { ...base, at, price: 10_000, rank: Math.max(1, rank - 1) } };
    }
    case 'rank_above': {
      const rank = alert.rank ?? 1000;
      return { before: { ...before, rank }, after: { ...base, at, price: 10_000, rank: rank + 100 } };
    }
    case 'any_change':
      return { before, after: { ...base, at, price: 10_000, rank: 900 } };
  }
}

/**
 * The sample's content: the alert's product and kind, its last two history points when the
 * service has observed the product (the latest as `after`), else points made up for the kind.
 * Sequence 0: never above what a receiver processed, so one that drops stale events drops it.
 */
async function sampleContent(deps: TestDeliveryDeps, alert: Alert, endpointId: Types.ObjectId, now: Date): Promise<DeliveryContent> {
  const points = await historyPointModel(deps.conn)
    .find({ country: alert.country, asin: alert.asin })
    .sort({ at: -1 })
    .limit(2)
    .maxTimeMS(DELIVERY_DB_TIMEOUT_MS)
    .lean();
  const change =
    points.length > 0 ? { before: points[1] ? toPayload(points[1]) : null, after: toPayload(points[0]!) } : samplePoints(alert, now);
  return {
    endpoint_id: endpointId.toHexString(),
    user_id: alert.user_id.toHexString(),
    alerts: [{ id: alert._id.toHexString(), kind: alert.kind, ...thresholdOf(alert), sequence: 0 }],
    asin: alert.asin,
    country: alert.country,
    ...change,
  };
}

type Outcome = Omit<TestDeliveryResult, 'webhookId'>;

/** A status other than success, in our words. */
function refused(status: number, channel: string, durationMs: number): Outcome {
  const error = channel === 'email' ? `the SMTP server refused the e-mail (${status})` : `the receiver answered ${status}`;
  return { outcome: 'refused', status, ok: false, durationMs, error };
}

/** The outcome of an attempt that failed, in our words: no text of the remote's, no address. */
function failed(err: unknown, channel: string, durationMs: number, timeoutMs: number): Outcome {
  const status = err instanceof WebhookDeliveryError ? err.status : null;
  if (status !== null) return refused(status, channel, durationMs);
  // The attempt's deadline is DELIVERY_TIMEOUT: a failure without a status at or past it is no answer in time.
  if (!(err instanceof WebhookTargetRefusedError) && durationMs >= timeoutMs) {
    return { outcome: 'timed_out', status: null, ok: false, durationMs, error: `no complete answer within ${timeoutMs} ms` };
  }
  const error =
    channel === 'email'
      ? 'the SMTP server could not be reached'
      : 'the target could not be reached (its name did not resolve, the connection failed, or its address is not one this server calls)';
  return { outcome: 'unreachable', status: null, ok: false, durationMs, error };
}

/**
 * Sends the account's alert a test delivery; null when the account has no such alert. The attempt
 * is not recorded and changes nothing: no delivery record, no failure span or disabling of the
 * endpoint (a 410, or a chat service's "no such webhook", is reported, not acted on), no
 * `last_delivery_at`, no metrics. A disabled endpoint gets no deliveries, so no tests either (409:
 * enable it first). Each test takes a place under the limits (test-limits.ts: 429, or 503 when
 * the process is busy). The answer is the outcome's class (TestOutcome), never the remote's text;
 * the log keeps what happened for the operator.
 */
export async function sendTestDelivery(
  deps: TestDeliveryDeps,
  userId: Types.ObjectId,
  alertId: string,
): Promise<TestDeliveryResult | null> {
  const view = await deps.rules.find(userId, alertId);
  if (!view) return null;
  const endpoint = view.endpoint ?? (await deps.endpoints.adopt(view.alert));
  const found = endpoint ? await deps.endpoints.health.forDelivery(endpoint._id) : null;
  if (!found) return null;
  if (found.endpoint.disabled_at) {
    const id = found.endpoint._id.toHexString();
    throw new ConflictError(
      `The alert's endpoint is disabled (${found.endpoint.disabled_reason ?? 'no reason'}): enable it with POST /api/webhooks/${id}/enable, then test it.`,
    );
  }
  const now = new Date();
  const webhookId = `test.${view.alert._id.toHexString()}.${now.getTime()}.${randomBytes(4).toString('hex')}`;
  // A sealed target or secret that does not open: nothing can be sent (forDelivery disabled the endpoint).
  if (found.unusable) return { outcome: 'unreachable', status: null, ok: false, durationMs: 0, error: found.unusable, webhookId };
  const permit = await deps.limits.acquire(userId, found.endpoint._id);
  try {
    const content = await sampleContent(deps, view.alert, found.endpoint._id, now);
    const started = performance.now();
    try {
      const answer = await sendOnChannel(
        {
          channel: found.channel,
          target: found.target,
          secrets: found.secrets,
          id: webhookId,
          content,
          test: true,
          product: () => deps.alerts.productLabel(view.alert.country, view.alert.asin),
        },
        { config: deps.config, resolve: deps.resolve ?? deps.endpoints.lookups.forAccount(userId), mail: deps.emailAddresses },
      );
      const { status, durationMs } = answer;
      if (answer.verdict === 'ok') return { outcome: 'delivered', status, ok: true, durationMs, error: null, webhookId };
      const outcome = refused(status, found.channel, durationMs);
      // judged() words a chat service's "gone" statuses itself (nothing of the receiver's body is read).
      return { ...outcome, error: answer.verdict === 'gone' && answer.reason ? answer.reason : outcome.error, webhookId };
    } catch (err) {
      // An address that has not said yes, or a spent cap: the request's answer (409, 429), not the receiver's.
      if (err instanceof EmailNotSentError) throw testRefusalAnswer(err);
      const error = err instanceof Error ? err : new Error(String(err));
      deps.logger.info({ alert: alertId, err: { name: error.name, message: error.message } }, 'test delivery failed');
      return { ...failed(err, found.channel, Math.round(performance.now() - started), deps.config.alerts.timeoutMs), webhookId };
    }
  } finally {
    permit.release();
  }
}

/** The test's answer (POST /api/alerts/{id}/test), with the descriptions the OpenAPI document shows. */
export const testedAnswer = z
  .object({
    data: z.object({
      outcome: z.enum(TEST_OUTCOMES).meta({
        description:
          'What happened, as a class: delivered (a 2xx; for email the SMTP server accepted it), refused (another status: `status`), timed_out (no complete answer within DELIVERY_TIMEOUT), unreachable (no answer: the name did not resolve, the connection failed, or the address is not one this server calls). Nothing the remote said is shown.',
      }),
      status: z.number().int().nullable().meta({
        description:
          "The receiver's HTTP status; for email the SMTP server's reply code (250: accepted); null when none arrived (timed_out, unreachable).",
      }),
      ok: z.boolean().meta({ description: 'outcome is delivered (as a real delivery would count it acknowledged).' }),
      duration_ms: z.number().int().meta({ description: 'From the start of the attempt to its answer or failure.' }),
      error: z.string().nullable().meta({
        description: 'The outcome in words (`the receiver answered 500`), never the remote’s text; null when delivered.',
      }),
      webhook_id: z.string().meta({
        description: 'The webhook-id the test was sent with (test.…; a test is not a delivery); for email, the Message-ID’s left part.',
      }),
    }),
  })
  .meta({ id: 'AlertTestAnswer' });

/** A test's result as the answer shows it. */
export function presentTest(tested: TestDeliveryResult): z.infer<typeof testedAnswer>['data'] {
  return {
    outcome: tested.outcome,
    status: tested.status,
    ok: tested.ok,
    duration_ms: tested.durationMs,
    error: tested.error,
    webhook_id: tested.webhookId,
  };
}
