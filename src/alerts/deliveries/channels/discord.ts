/**
 * Discord webhooks (https://discord.com/developers/docs/resources/webhook#execute-webhook): `content`
 * is the plain message, `embeds` the card. Titles come from a retailer, so no mention in them may
 * ping anyone (`allowed_mentions` parses none) and none of their markdown may format or link: every
 * character Discord's markdown reads is escaped with a backslash, which shows it as itself.
 */
import { summaryOf, type AlertMessage } from './message.js';
import type { ChatService } from './types.js';

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * Emphasis, strike, spoilers, code, quotes, headings, lists, masked links `[x](url)`, mentions,
 * channels, emoji and timestamps `<…>`, and the `:` of a bare URL, which would otherwise link.
 */
const MARKDOWN = /[\\*_~`|>#\-[\]()<:]/g;

/** `text` with Discord's markdown characters escaped, cut to at most `max` characters (an escape is never split). */
export function discordText(text: string, max = Infinity): string {
  const whole = text.replace(MARKDOWN, '\\$&');
  if (whole.length <= max) return whole;
  let out = '';
  for (const c of text) {
    const next = c.replace(MARKDOWN, '\\$&');
    if (out.length + next.length > max - 1) break;
    out += next;
  }
  return `${out}…`;
}

/** Green for a price that fell or stock that came back, red for a rise, grey otherwise. */
function colour(m: AlertMessage): number {
  if (m.kinds.some((k) => k === 'price_drop' || k === 'price_below' || k === 'back_in_stock')) return 0x2e7d32;
  if (m.kinds.includes('price_rise')) return 0xc62828;
  return 0x607d8b;
}

export function discordPayload(m: AlertMessage) {
  return {
    content: cut(
      summaryOf(m, (title) => discordText(title)),
      2_000,
    ),
    embeds: [
      {
        title: discordText(m.product, 256),
        url: m.link,
        description: cut(`${m.test ? '**[Test]** ' : ''}**${m.what}**\n${m.change}`, 4_096),
        color: colour(m),
        fields: [
          { name: 'ASIN', value: m.asin, inline: true },
          { name: 'Marketplace', value: m.country, inline: true },
          { name: 'Seen', value: m.at, inline: true },
        ],
        footer: { text: 'shelfwatch' },
      },
    ],
    allowed_mentions: { parse: [] },
  };
}

export const discord: ChatService = {
  name: 'Discord',
  payload: discordPayload,
  gone: {
    // 10015 Unknown Webhook: deleted. 50027 Invalid Webhook Token: its token was reset.
    401: 'the Discord webhook token is no longer valid',
    404: 'the Discord webhook no longer exists',
  },
};
