import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import { summaryOf, type AlertMessage } from '../../src/alerts/deliveries/channels/message.js';
import { ntfyPayload, ntfyPriority } from '../../src/alerts/deliveries/channels/ntfy.js';
import { telegramPayload, telegramText } from '../../src/alerts/deliveries/channels/telegram.js';
import { retryAfterMs } from '../../src/alerts/deliveries/channels/types.js';
import { sendOnChannel } from '../../src/alerts/deliveries/channels/dispatch.js';
import { keyOf, ntfyTopicOf, openedTarget, sealedTarget } from '../../src/alerts/endpoints/target.js';
import { deliveryBackoff } from '../../jobs/deliver.js';
import { WebhookDeliveryError } from '../../src/core/errors.js';

/** Titles an upstream could carry to make a message format, link or break out of an attribute. */
const TITLE = '<b>bold</b> & <a href="https://evil.example">x</a> &amp; <tg-spoiler>s</tg-spoiler>';

function message(product: string, kinds: AlertMessage['kinds'] = ['price_drop']): AlertMessage {
  const parts = { test: false, what: 'Price drop', product, country: 'JP' as const, change: '￥1,980 → ￥1,780 (−10.1%)' };
  return {
    ...parts,
    asin: 'B0PAYLOAD1',
    kinds,
    before: '￥1,980',
    after: '￥1,780',
    at: '2026-11-24 10:00:00 Asia/Tokyo',
    link: 'https://www.amazon.co.jp/dp/B0PAYLOAD1?a=1&b="2"',
    summary: summaryOf(parts),
  };
}

describe('Telegram HTML', () => {
  it('escapes &, < and > in every text, so no title can format or link', () => {
    const { text } = telegramPayload(message(TITLE), '42');
    const title = text.split('\n')[1]!;
    expect(title).toBe(telegramText(TITLE));
    expect(title).not.toMatch(/<|>/);
    expect(title).toContain('&amp;amp;');
    // The only tags are ours: the bold heading and the one link.
    expect(text.match(/<[a-z/][^>]*>/g)).toEqual(['<b>', '</b>', expect.stringMatching(/^<a href="/), '</a>']);
  });

  it('escapes the link for its attribute, so a quote cannot end it', () => {
    const { text } = telegramPayload(message('x'), '@chan');
    expect(text).toContain('<a href="https://www.amazon.co.jp/dp/B0PAYLOAD1?a=1&amp;b=&quot;2&quot;">B0PAYLOAD1</a>');
  });

  it('sends a numeric chat id as a number and a @username as a string', () => {
    expect(telegramPayload(message('x'), '-1001234567890').chat_id).toBe(-1001234567890);
    expect(telegramPayload(message('x'), '@shelf_deals').chat_id).toBe('@shelf_deals');
  });
});

describe('ntfy', () => {
  it('sends the title as plain text and a priority by kind', () => {
    expect(ntfyPayload(message(TITLE), 'topic').message.split('\n')[0]).toBe(TITLE);
    expect(ntfyPriority(['price_below'])).toBe(4);
    expect(ntfyPriority(['back_in_stock', 'any_change'])).toBe(4);
    expect(ntfyPriority(['price_rise', 'rank_above'])).toBe(3);
    expect(ntfyPayload(message('x', ['rank_below', 'rank_above']), 't').tags).toEqual(['bar_chart']);
  });

  it.each([
    ['https://ntfy.sh/my_topic-1', 'my_topic-1'],
    ['https://push.example.org/ntfy/alerts', 'alerts'],
    ['https://ntfy.sh/', null],
    ['https://ntfy.sh/topic?x=1', null],
    ['https://ntfy.sh/a.b', null],
  ])('reads the topic of %s as %s', (url, topic) => {
    expect(ntfyTopicOf(url)).toBe(topic);
  });
});

describe('sealed targets', () => {
  const appKey = Buffer.alloc(32, 7);
  it('keep a hook URL as it was sealed before ntfy and Telegram, so existing endpoints keep their keys', () => {
    const url = 'https://hooks.slack.com/services/T/B/x';
    expect(sealedTarget({ channel: 'slack', url })).toBe(url);
    expect(openedTarget('slack', url)).toEqual({ channel: 'slack', url });
  });

  it('open to the target they sealed, and show no credential', () => {
    const tg = { channel: 'telegram', botToken: '123456789:AAHsecretsecretsecretsecretsecret00', chatId: '-1009876' } as const;
    expect(openedTarget('telegram', sealedTarget(tg))).toEqual(tg);
    expect(keyOf(tg, appKey).shown).toBe('telegram:bot123456789/…9876');
    const nt = { channel: 'ntfy', url: 'https://ntfy.sh/private-topic', token: 'tk_abcdefgh12345' } as const;
    expect(openedTarget('ntfy', sealedTarget(nt))).toEqual(nt);
    expect(keyOf(nt, appKey).shown).toBe('https://ntfy.sh/…opic');
    expect(keyOf(nt, appKey).key).not.toBe(keyOf({ ...nt, token: null }, appKey).key);
  });
});

describe('waiting as a 429 asks', () => {
  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('2')).toBe(2_000);
    expect(retryAfterMs(new Date(Date.now() + 60_000).toUTCString(), Date.now())).toBeGreaterThan(58_000);
    expect(retryAfterMs('soon')).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
  });

  it('waits the longer of the schedule and the answer, at most an hour, and never past the schedule', () => {
    const backoff = deliveryBackoff([200, 5_000]);
    const asking = (ms: number) => new WebhookDeliveryError('the receiver answered 429', 429, { retryAfterMs: ms });
    expect(backoff(1, 'webhook-schedule', asking(3_000))).toBe(3_000);
    expect(backoff(2, 'webhook-schedule', asking(1_000))).toBe(5_000);
    expect(backoff(1, 'webhook-schedule', asking(86_400_000))).toBe(3_600_000);
    expect(backoff(3, 'webhook-schedule', asking(3_000))).toBe(-1);
    expect(backoff(1, 'webhook-schedule', new Error('x'))).toBe(200);
  });
});

describe('a Telegram failure without an answer', () => {
  it('never carries the bot token in its error', async () => {
    const config = loadConfig({ ENDPOINT_ALLOW_PRIVATE: 'true', TELEGRAM_API_URL: 'http://127.0.0.1:9', DELIVERY_TIMEOUT: '2s' });
    const botToken = '123456789:AAHneverInAnErrorneverInAnError000';
    const send = sendOnChannel(
      {
        channel: 'telegram',
        target: sealedTarget({ channel: 'telegram', botToken, chatId: '42' }),
        secrets: [],
        id: 'scrub-test',
        content: {
          endpoint_id: 'a'.repeat(24),
          user_id: 'b'.repeat(24),
          alerts: [{ id: 'c'.repeat(24), kind: 'any_change' }],
          asin: 'B0SCRUBTST',
          country: 'JP',
          before: null,
          after: { at: Date.now(), price: 100, currency: 'JPY', availability: 'in_stock', buybox: true, rank: 1 },
        },
        test: false,
        product: async () => ({ title: null, url: null }),
      },
      { config },
    );
    const err = await send.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WebhookDeliveryError);
    expect(String((err as Error).message)).not.toContain(botToken.slice(10));
  });
});
