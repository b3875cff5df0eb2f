import { describe, expect, it } from 'vitest';
import { summaryOf, type AlertMessage } from '../../src/alerts/deliveries/channels/message.js';
import { slackPayload } from '../../src/alerts/deliveries/channels/slack.js';
import { discordPayload, discordText } from '../../src/alerts/deliveries/channels/discord.js';
import { teamsPayload } from '../../src/alerts/deliveries/channels/teams.js';
import { emailContent } from '../../src/alerts/deliveries/channels/email.js';

/** Titles an upstream could carry to make a chat message link, format or ping. */
const HOSTILE = [
  '[click](https://evil.example)',
  '**bold** __under__ *it* _it_ ~~gone~~ ~gone~ `code` ||spoiler||',
  '<!channel> <!here> <@U123> <#C123> <!subteam^S1>',
  '@everyone @here <@123456789012345678> <@&987> <#123> <t:1700000000:R> <:pepe:123>',
  '<https://x|y> https://evil.example/path',
  '# Heading\n> quote\n- item\n1. item',
  'a \\*b\\* c',
];
const TITLE = HOSTILE.join(' ');

function message(product: string): AlertMessage {
  const parts = { test: false, what: 'Price drop', product, country: 'JP' as const, change: '￥1,980 → ￥1,780 (−10.1%)' };
  return {
    ...parts,
    asin: 'B0HOSTILE1',
    kinds: ['price_drop'],
    before: '￥1,980',
    after: '￥1,780',
    at: '2026-11-24 10:00:00 Asia/Tokyo',
    link: 'https://www.amazon.co.jp/dp/B0HOSTILE1',
    summary: summaryOf(parts),
  };
}

/** Discord's escape: a backslash before any punctuation shows it as itself. */
const unescapeDiscord = (text: string) => text.replace(/\\([^0-9A-Za-z\s])/g, '$1');
/** What Discord would read as markup: a markdown character not escaped. */
const discordMarkup = (text: string) => text.replace(/\\[^0-9A-Za-z\s]/g, '').match(/[*_~`|<>[\]()#:-]/g) ?? [];

describe('a hostile product title', () => {
  it('Slack: only in a plain_text block and in a fallback with formatting off; never a link, mention or format', () => {
    const entities = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    for (const title of HOSTILE) {
      const body = slackPayload(message(title));
      expect(body.mrkdwn).toBe(false);
      // Slack's control characters are entities everywhere: no <!channel>, no <url|label>.
      expect(body.text).toContain(entities(title.length > 80 ? `${title.slice(0, 79)}…` : title));
      for (const text of [body.text, ...body.blocks.map((b) => JSON.stringify(b))]) {
        expect(text).not.toMatch(/<!channel>|<!here>|<@U123>|<https:\/\/x\|y>|<#C123>/);
      }
      // The mrkdwn blocks hold only our words: the title is in none of them.
      const mrkdwn = body.blocks.flatMap((b) => [
        ...('text' in b && b.text?.type === 'mrkdwn' ? [b.text.text] : []),
        ...('elements' in b ? (b.elements ?? []).map((e) => e.text) : []),
      ]);
      expect(mrkdwn).toHaveLength(2);
      for (const text of mrkdwn)
        for (const piece of ['click', 'bold', 'spoiler', 'evil', 'channel', 'everyone', 'Heading']) expect(text).not.toContain(piece);
      const plain = body.blocks.flatMap((b) => ('text' in b && b.text?.type === 'plain_text' ? [b.text] : []));
      expect(plain).toEqual([{ type: 'plain_text', text: entities(title), emoji: false }]);
    }
    const long = slackPayload(message(TITLE.repeat(3))).blocks[1]!;
    expect(long).toEqual({
      type: 'section',
      text: { type: 'plain_text', text: entities(`${TITLE.repeat(3).slice(0, 499)}…`), emoji: false },
    });
  });

  it('Discord: every markdown character escaped in content and the embed title, which still read as the title', () => {
    for (const title of HOSTILE) {
      const body = discordPayload(message(title));
      expect(body.allowed_mentions).toEqual({ parse: [] });
      const embedTitle = body.embeds[0]!.title;
      expect(discordMarkup(embedTitle)).toEqual([]);
      expect(unescapeDiscord(embedTitle)).toBe(title);
      const content = body.content;
      const inContent = discordText(title.length > 80 ? `${title.slice(0, 79)}…` : title);
      expect(content).toContain(inContent);
      expect(discordMarkup(inContent)).toEqual([]);
    }
    expect(discordText('[click](https://evil.example)')).toBe('\\[click\\]\\(https\\://evil.example\\)');
    expect(discordText('**bold**')).toBe('\\*\\*bold\\*\\*');
    expect(discordText('<@123>')).toBe('\\<@123\\>');
  });

  it('Discord: a long title is cut within the embed limit without splitting an escape', () => {
    const title = '*'.repeat(300);
    const embedTitle = discordPayload(message(title)).embeds[0]!.title;
    expect(embedTitle.length).toBeLessThanOrEqual(256);
    expect(embedTitle).toMatch(/^(\\\*)+…$/);
  });

  it('Teams: a TextRun, which reads no markdown; no TextBlock or fact carries it', () => {
    const body = teamsPayload(message(TITLE));
    const card = body.attachments[0]!.content;
    const runs = card.body.flatMap((b) => ('inlines' in b ? b.inlines : []));
    expect(runs).toEqual([{ type: 'TextRun', text: TITLE }]);
    for (const block of card.body) {
      if (block.type === 'TextBlock' || block.type === 'FactSet') expect(JSON.stringify(block)).not.toContain('evil');
    }
  });

  it('e-mail: HTML-escaped in the HTML part, so it is text there too', () => {
    const { html } = emailContent(message(TITLE));
    expect(html).not.toContain('<!channel>');
    expect(html).not.toContain('<https://x|y>');
    expect(html).toContain('&lt;!channel&gt;');
  });
});
