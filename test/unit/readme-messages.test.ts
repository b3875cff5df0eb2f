import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { summaryOf, type AlertMessage } from '../../src/alerts/deliveries/channels/message.js';
import { slackPayload } from '../../src/alerts/deliveries/channels/slack.js';
import { discordPayload } from '../../src/alerts/deliveries/channels/discord.js';
import { teamsPayload } from '../../src/alerts/deliveries/channels/teams.js';
import { ntfyPayload } from '../../src/alerts/deliveries/channels/ntfy.js';
import { telegramPayload } from '../../src/alerts/deliveries/channels/telegram.js';
import { emailContent } from '../../src/alerts/deliveries/channels/email.js';
import { deliveryContentSchema } from '../../src/alerts/deliveries/payload.js';

/** The README's "What an alert says" shows what the renderers make of this one change. */
const parts = {
  test: false,
  what: 'Price below ￥5,000',
  product: 'Electric Kettle 1.2 L',
  country: 'JP' as const,
  change: '￥5,480 → ￥4,780 (−12.8%)',
};
const message: AlertMessage = {
  ...parts,
  asin: 'B0D1234567',
  kinds: ['price_below'],
  before: '￥5,480',
  after: '￥4,780',
  at: '2026-11-24 10:00:00 Asia/Tokyo',
  link: 'https://www.amazon.co.jp/dp/B0D1234567',
  summary: summaryOf(parts),
};

/** The README's ```text <channel> blocks, by channel. */
function readmeBlocks(): Map<string, string[]> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const blocks = new Map<string, string[]>();
  for (const m of readme.matchAll(/^```text (\w+)\n([\s\S]*?)^```$/gm)) blocks.set(m[1]!, m[2]!.split('\n').filter(Boolean));
  return blocks;
}

/** Every string in a payload, with the chat formats' markup taken off, as a person reads it. */
function shownText(payload: unknown): string {
  const strings: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') strings.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(payload);
  return strings
    .join('\n')
    .replace(/<https?:[^|>]+\|([^>]+)>/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/\*\*?([^*]+)\*\*?/g, '$1')
    .replace(/\n\n+/g, '\n');
}

/** A README line matches when the rendered text holds it, up to its first "…". */
function expectShown(lines: readonly string[], text: string): void {
  for (const line of lines) expect(text).toContain(line.split('…')[0]!.trimEnd());
}

describe("the README's example messages", () => {
  const blocks = readmeBlocks();

  it('shows what Slack and ntfy send, line by line', () => {
    expect(blocks.get('slack')).toBeDefined();
    expectShown(blocks.get('slack')!, shownText(slackPayload(message)));
    expectShown(blocks.get('ntfy')!, shownText(ntfyPayload(message, 'shelf-deals')));
  });

  it('shows an e-mail whose subject is the chat notification line', () => {
    const mail = emailContent(message, 'https://shelf.example.com/u/x');
    const [subject, ...body] = blocks.get('email')!;
    expect(subject).toBe(mail.subject);
    expectShown(body, mail.text);
  });

  it('says the words Discord, Teams and Telegram also carry', () => {
    for (const payload of [discordPayload(message), teamsPayload(message), telegramPayload(message, '-1001234567890')]) {
      const text = shownText(payload);
      for (const words of [parts.what, parts.product, parts.change, message.asin, message.at]) expect(text).toContain(words);
    }
  });

  it("names only fields of the webhook's body", () => {
    const known = new Set([
      'alert_id',
      'kind',
      'sequence',
      ...Object.keys(deliveryContentSchema.shape),
      ...Object.keys(deliveryContentSchema.shape.alerts.element.shape),
      ...Object.keys(deliveryContentSchema.shape.after.shape),
    ]);
    const named = [
      ...blocks
        .get('webhook')!
        .join('\n')
        .matchAll(/"(\w+)":/g),
    ].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(5);
    for (const name of named) expect(known).toContain(name);
  });
});
