/**
 * Microsoft Teams: a Workflows "when a Teams webhook request is received" flow, or an incoming
 * webhook, both take a message whose attachment is an Adaptive Card
 * (https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook).
 * Workflows answer 202: any 2xx acknowledges.
 *
 * A TextBlock reads a subset of markdown (emphasis, lists, `[x](url)` links), so the product's
 * title, the upstream's text, goes in a RichTextBlock's TextRun, which shows its text as it is.
 */
import type { AlertMessage } from './message.js';
import type { ChatService } from './types.js';

export function teamsPayload(m: AlertMessage) {
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body: [
            { type: 'TextBlock', text: `${m.test ? '[Test] ' : ''}${m.what}`, weight: 'Bolder', size: 'Medium', wrap: true },
            { type: 'RichTextBlock', inlines: [{ type: 'TextRun', text: m.product }] },
            {
              type: 'FactSet',
              facts: [
                { title: 'Change', value: m.change },
                { title: 'ASIN', value: m.asin },
                { title: 'Marketplace', value: m.country },
                { title: 'Seen', value: m.at },
              ],
            },
          ],
          actions: [{ type: 'Action.OpenUrl', title: 'Open the product page', url: m.link }],
        },
      },
    ],
  };
}

export const teams: ChatService = {
  name: 'Teams',
  payload: teamsPayload,
  gone: {
    404: 'the Teams workflow or webhook no longer exists',
    410: 'the Teams webhook was removed',
  },
};
