import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { Config } from '../../../../config/env.js';
import { digestWebhookPayloadSchema, webhookPayloadSchema } from '../../../alerts/deliveries/present.js';

/** A duration in words (`5 s`, `30 min`, `10 h`) for the retry schedule. */
function words(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1_000} s`;
}

const signatureHeaders = z.object({
  'webhook-id': z.string().meta({
    description: 'The delivery id: the same on every attempt and replay of one delivery, so a receiver can drop duplicates.',
  }),
  'webhook-timestamp': z.string().meta({
    description: 'When this attempt was sent, in Unix seconds. Receivers refuse one more than 5 minutes off their clock.',
  }),
  'webhook-signature': z.string().meta({
    description:
      'Space-separated `v1,<base64>` signatures (HMAC-SHA256 of `{id}.{timestamp}.{body}` under the endpoint secret, Standard Webhooks). Verify with any Standard Webhooks library, e.g. `new Webhook(secret).verify(body, headers)` of the `standardwebhooks` package.',
  }),
});

/**
 * The requests this instance makes to its users' receivers (OpenAPI 3.1 `webhooks`): what an alert
 * on channel `webhook` POSTs, how it is signed, and what each answer makes of the delivery, so a
 * receiver can be written from the document alone.
 */
export function deliveryWebhooks(config: Pick<Config, 'alerts'>): ZodOpenApiPathsObject {
  const schedule = config.alerts.retryScheduleMs.map(words).join(', ');
  const disableAfter = words(config.alerts.disableAfterMs);
  const answers = {
    '2XX': { description: 'Acknowledged: the delivery is done, and the endpoint counts as healthy again.' },
    410: {
      description: 'Gone: the endpoint is disabled at once and gets no more deliveries until enabled (POST /api/webhooks/{id}/enable).',
    },
    default: { description: 'Any other answer fails the attempt; it is retried on the schedule above.' },
  };
  return {
    alertDelivery: {
      post: {
        tags: ['Alerts'],
        operationId: 'alertDelivery',
        summary: "A change fired alerts on this endpoint: POSTed to the alerts' webhook_url",
        description: `One delivery per change and endpoint, listing every alert of the account on that URL the change fired (several of one kind too: alerts that differ only in their threshold travel together). Signed with the endpoint's secret (Standard Webhooks); the body is JSON. A receiver that keeps the last \`sequence\` it processed per alert and product can drop stale and replayed events. Retried on any answer but 2xx and 410 (and on timeouts and refused connections), after ${schedule}; an endpoint failing for longer than ${disableAfter} (ENDPOINT_DISABLE_AFTER) is disabled, and the account gets an event (GET /api/events). Undelivered deliveries can be sent again (POST /api/deliveries/{id}/replay).`,
        requestParams: { header: signatureHeaders },
        requestBody: { required: true, content: { 'application/json': { schema: webhookPayloadSchema } } },
        responses: answers,
      },
    },
    digestDelivery: {
      post: {
        tags: ['Alerts'],
        operationId: 'digestDelivery',
        summary: 'The window of an hourly or daily endpoint, or its quiet hours, closed with alerts held: one digest POSTed to its URL',
        description: `Sent instead of the instant deliveries when the endpoint's \`delivery\` is \`hourly\` or \`daily\`, or they fired in its quiet hours (PATCH /api/webhooks/{id}): one delivery per endpoint and window, \`type: "digest"\`, listing each held delivery's body as \`alertDelivery\` would have sent it, newest first. None when nothing fired. Its \`webhook-id\` is \`<endpoint id>.digest.<window end, ms>.<digest>\`. Signed, retried after ${schedule} and disabling like \`alertDelivery\`.`,
        requestParams: { header: signatureHeaders },
        requestBody: { required: true, content: { 'application/json': { schema: digestWebhookPayloadSchema } } },
        responses: answers,
      },
    },
  };
}
