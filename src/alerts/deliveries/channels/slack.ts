/**
 * Slack incoming webhooks (https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks):
 * `text` is the notification's and screen readers' fallback, `blocks` what the channel shows.
 *
 * A product's title is the upstream's text, so it must not format, link or mention. mrkdwn has no
 * escape for `*`, `_`, `~` and `` ` ``: in the blocks the title is a `plain_text` section of its
 * own, and `text` is sent with formatting off (`mrkdwn: false`). &, < and > are escaped everywhere,
 * as Slack reads them as control characters (`<!channel>`, `<url|label>`) even in plain text.
 */
import type { AlertMessage } from './message.js';
import type { ChatService } from './types.js';

/** Slack's control characters as the entities it expects. */
function escaped(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A `<url|label>` link: the URL must not carry the `|` or `>` that end its part. */
function link(url: string, label: string): string {
  return `<${url.replace(/\|/g, '%7C').replace(/>/g, '%3E')}|${escaped(label)}>`;
}

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

export function slackPayload(m: AlertMessage) {
  const heading = `${m.test ? '*[Test]* ' : ''}*${escaped(m.what)}*\n${escaped(m.change)}`;
  return {
    text: escaped(m.summary),
    mrkdwn: false,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: heading } },
      // At most 500 characters, so that escaped it stays within a text object's 3,000.
      { type: 'section', text: { type: 'plain_text', text: escaped(cut(m.product, 500)), emoji: false } },
      // The ASIN is ours (checked at creation), so it can label the link to the product's page.
      { type: 'context', elements: [{ type: 'mrkdwn', text: `${link(m.link, m.asin)} · ${escaped(`${m.country} · ${m.at}`)}` }] },
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
