/**
 * ntfy (https://docs.ntfy.sh/publish/): a message published as JSON to the server's root (the
 * topic URL without its topic), `{topic, title, message, priority, tags, click}`; a protected
 * topic's access token as `Authorization: Bearer tk_…`
 * (https://docs.ntfy.sh/publish/#access-tokens).
 *
 * JSON rather than the topic URL with X-Title, X-Tags… headers: a product's title is any Unicode
 * (Japanese, German…), which a header carries only RFC 2047-encoded, and a header must not hold a
 * line break; a JSON string carries any text as it is. The message is sent without `markdown: true`,
 * so ntfy shows it as plain text: the title, the upstream's text, needs no escaping and cannot format.
 */
import type { AlertKind } from '../../../models/alert.js';
import { ntfyTopicOf, type ChatTarget } from '../../endpoints/target.js';
import type { AlertMessage } from './message.js';
import { retryAfterMs, type ChatAnswers, type ChatRequest } from './types.js';

type NtfyTarget = Extract<ChatTarget, { channel: 'ntfy' }>;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** ntfy shows a tag that names an emoji as that emoji, before the title. */
const KIND_EMOJI: Readonly<Record<AlertKind, string>> = {
  price_below: 'moneybag',
  price_drop: 'chart_with_downwards_trend',
  price_rise: 'chart_with_upwards_trend',
  back_in_stock: 'package',
  out_of_stock: 'no_entry_sign',
  buybox_change: 'shopping_cart',
  rank_below: 'bar_chart',
  rank_above: 'bar_chart',
  any_change: 'bell',
};

/**
 * 4 (high: a phone vibrates and sounds longer) for the moments to buy, a price below the threshold,
 * a drop, stock back; 3 (ntfy's default) for the rest.
 */
export function ntfyPriority(kinds: readonly AlertKind[]): 3 | 4 {
  return kinds.some((k) => k === 'price_below' || k === 'price_drop' || k === 'back_in_stock') ? 4 : 3;
}

export function ntfyPayload(m: AlertMessage, topic: string) {
  return {
    topic,
    title: `${m.test ? '[Test] ' : ''}${m.what}`,
    message: `${cut(m.product, 500)}\n${m.change}\n${m.asin} · ${m.country} · ${m.at}`,
    priority: ntfyPriority(m.kinds),
    tags: [...new Set(m.kinds.map((k) => KIND_EMOJI[k]))],
    click: m.link,
  };
}

/** The publish: to the server's root, with the topic in the body, and the token when the topic has one. */
export function ntfyRequest(m: AlertMessage, target: NtfyTarget): ChatRequest {
  const topic = ntfyTopicOf(target.url);
  // The URL was checked at creation: one without a topic cannot have been sealed.
  if (topic === null) throw new Error('the ntfy endpoint has no topic');
  return {
    url: new URL('./', target.url).href,
    headers: target.token === null ? {} : { authorization: `Bearer ${target.token}` },
    body: ntfyPayload(m, topic),
  };
}

export const ntfy: ChatAnswers = {
  name: 'ntfy',
  gone: {
    // 40101: no token, or one the server does not know (deleted, expired). 40301: the token's user may not write the topic.
    401: 'the ntfy server refused the access token (missing, expired or deleted)',
    403: 'the ntfy topic may not be written with this access token',
  },
  // ntfy's 429 (42901…) may carry Retry-After; a proxy in front of a self-hosted server may too.
  reads: (answer) => ({ retryAfterMs: answer.status === 429 ? retryAfterMs(answer.retryAfter) : null }),
};
