/**
 * Slack incoming webhooks (https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks):
 * `text` is the notification's and screen readers' fallback, `blocks` what the channel shows.
 */
import type { AlertMessage } from './message.js';
import type { ChatService } from './types.js';

/** Slack's mrkdwn takes &, < and > as control characters; everything else is text. */
function escaped(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A `<url|label>` link: the URL must not carry the `|` or `>` that end its part. */
function link(url: string, label: string): string {
  return `<${url.replace(/\|/g, '%7C').replace(/>/g, '%3E')}|${escaped(label)}>`;
}

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function slackPayload(m: AlertMessage) {
  const heading = `${m.test ? '*[Test]* ' : ''}*${escaped(m.what)}*: ${link(m.link, cut(m.product, 300))}`;
  return {
    text: escaped(m.summary),
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `${heading}\n${escaped(m.change)}` } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: escaped(`${m.asin} · ${m.country} · ${m.at}`) }] },
    ],
  };
}

export const slack: ChatService = {
  name: 'Slack',
  payload: slackPayload,
  gone: {
    404: 'the Slack webhook or its channel no longer exists',
    410: 'the Slack channel is archived',
  },
};
