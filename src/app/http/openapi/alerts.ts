import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { Config } from '../../../../config/env.js';
import { alertAnswer, alertInputs, createdAnswer } from '../../../alerts/rules/inputs.js';
import { alertRecordSchema } from '../../../alerts/rules/present.js';
import { deliveryRecordSchema } from '../../../alerts/deliveries/present.js';
import { testedAnswer } from '../../../alerts/deliveries/test-delivery.js';
import { pagedSchema, pageQuerySchema } from '../paginate.js';
import { ACCOUNT_API_SECURITY, bodyToken, errors, limited, tokenOnlyBody } from './responses.js';

/** A page of the account's alerts, as GET /api/alerts reads it. */
export const alertListQuery = pageQuerySchema({ defaultLimit: 50, maxLimit: 100 });

const alertPage = pagedSchema(alertRecordSchema, 'AlertPage');

/** A page of deliveries: an alert's here, the account's in deliveries.ts (one component of the document). */
export const deliveryPage = pagedSchema(deliveryRecordSchema, 'DeliveryPage');

export function alertsPaths(config: Pick<Config, 'countries' | 'alerts'>): ZodOpenApiPathsObject {
  const input = { ...alertInputs(config), list: alertListQuery };
  const common = { tags: ['Alerts'], security: ACCOUNT_API_SECURITY };
  const body = input.body.safeExtend(bodyToken);
  return {
    '/api/alerts': {
      get: {
        ...common,
        operationId: 'listAlerts',
        summary: "The caller's alerts, newest first",
        requestParams: { query: input.list },
        responses: { 200: limited('A page of alerts.', alertPage), ...errors(401, 422, 429) },
      },
      post: {
        ...common,
        operationId: 'createAlert',
        summary:
          'Create an alert: a signed webhook, a chat message or an e-mail when a product changes as described (watches the ASIN if needed)',
        description:
          'An account may hold several alerts on one product, of one kind too, that differ in their firing options (price, percent, amount, rank, reference, days, rearm_above, rearm_after) or target (channel and webhook_url or email): at most ACCOUNT_MAX_ALERTS_PER_PRODUCT on one product in one country, every kind counted (422 on `asin` past it), and ACCOUNT_MAX_ALERTS in all (422 on `kind`). Posting an alert identical to one the account has (same country, ASIN, kind, firing options and target) answers 200 with that alert, which takes the posted `paused` and is re-armed; concurrent identical posts make one alert.',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: body }, 'application/x-www-form-urlencoded': { schema: body } },
        },
        responses: {
          201: limited("The new alert, with its endpoint's signing secret.", createdAnswer),
          200: limited(
            'The account had this very alert (same country, ASIN, kind, firing options and target): it now has the posted `paused`, re-armed; with its endpoint’s signing secret.',
            createdAnswer,
          ),
          ...errors(401, 413, 415, 422, 429),
        },
      },
    },
    '/api/alerts/{id}': {
      get: {
        ...common,
        operationId: 'getAlert',
        summary: 'One of the caller’s alerts',
        requestParams: { path: input.id },
        responses: { 200: limited('The alert.', alertAnswer), ...errors(401, 404, 429) },
      },
      patch: {
        ...common,
        operationId: 'updateAlert',
        summary: 'Pause or resume an alert (its other options stay; POST /api/alerts sets them)',
        description:
          'A paused alert is not judged: it fires nothing, and resuming it fires nothing for what changed while it was paused. Resuming re-arms a price_below alert. `paused` is state, not part of what makes two alerts the same, so a PATCH never makes an alert identical to another.',
        requestParams: { path: input.id },
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: input.patch.safeExtend(bodyToken) },
            'application/x-www-form-urlencoded': { schema: input.patch.safeExtend(bodyToken) },
          },
        },
        responses: { 200: limited('The alert as it now is.', alertAnswer), ...errors(401, 404, 413, 415, 422, 429) },
      },
      delete: {
        ...common,
        operationId: 'deleteAlert',
        summary:
          'Delete an alert (deliveries queued for it alone are dropped; the watch stays; its endpoint goes when no other alert uses it)',
        requestParams: { path: input.id },
        responses: {
          200: limited('Deleted; the alert as it was.', z.object({ message: z.string(), data: alertRecordSchema })),
          ...errors(401, 404, 429),
        },
      },
    },
    '/api/alerts/{id}/test': {
      post: {
        ...common,
        operationId: 'testAlert',
        summary:
          "Send a sample delivery on the alert's channel now (one attempt within DELIVERY_TIMEOUT, not queued, not recorded) and answer what class of thing happened",
        description:
          "On channel webhook the body is a WebhookPayload of the alert (its product, kind and id) with `\"test\": true` and `sequence` 0: its product's last two history points, or points made up for its kind when the product has none. Signed with the endpoint's secret like a real delivery, through the same address checks, port rule and timeout. On the chat channels and email it is the message a real delivery would send for those points, marked [Test]. A receiver that fails, hangs or is refused still answers 200, with `ok: false` and the `outcome`; nothing the remote said (a body, an SMTP reply's text, a socket error) is shown. Nothing is recorded and the endpoint's health is not changed. Limits: ALERT_TESTS_PER_HOUR tests to one endpoint an hour and ALERT_TESTS_PER_DAY tests of the account a day (429 with Retry-After; a refused test counts nothing); 503 with Retry-After when the server is already sending ALERT_TESTS_IN_FLIGHT tests; 409 while the alert's endpoint is disabled (enable it first). On channel email only a confirmed address gets the test: 409, with a message saying why, while its email_status is pending (awaiting its owner's confirmation), unsubscribed or bounced; and it counts under the daily e-mail caps (429 with Retry-After, until midnight UTC, when one is spent).",
        requestParams: { path: input.id },
        requestBody: tokenOnlyBody,
        responses: {
          200: limited('The test ran; what class of answer the receiver gave.', testedAnswer),
          ...errors(401, 404, 409, 413, 429),
        },
      },
    },
    '/api/alerts/{id}/deliveries': {
      get: {
        ...common,
        operationId: 'listAlertDeliveries',
        summary: "An alert's webhook deliveries, newest first",
        requestParams: { path: input.id, query: input.list },
        responses: { 200: limited('A page of deliveries.', deliveryPage), ...errors(401, 404, 422, 429) },
      },
    },
  };
}
