/**
 * Where an alert delivers, and how its endpoint is keyed and shown. A chat service's target carries
 * a credential (whoever holds a hook URL, an ntfy topic and token, or a bot token posts to the
 * channel), so it is never stored or shown in the clear: the endpoint is keyed by a hash of the
 * whole target under a key derived from APP_KEY, holds it sealed, and answers show it redacted.
 */
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { purposeKey } from '../../../config/app-key.js';
import type { AlertChannel, ChatChannel } from '../../models/alert.js';

/** The chat services whose whole target is their incoming webhook's URL. */
export type HookChannel = 'slack' | 'discord' | 'teams';

export type AlertTarget =
  | { readonly channel: 'webhook'; readonly url: string }
  | { readonly channel: HookChannel; readonly url: string }
  /** An ntfy topic's URL, and the access token (tk_…) when the topic is protected. */
  | { readonly channel: 'ntfy'; readonly url: string; readonly token: string | null }
  /** A Telegram bot's token and the chat it writes to: a numeric id or `@channelname`. */
  | { readonly channel: 'telegram'; readonly botToken: string; readonly chatId: string }
  | { readonly channel: 'email'; readonly address: string };

export type ChatTarget = Extract<AlertTarget, { channel: ChatChannel }>;

/** What an endpoint document stores of its target, beside its key. */
export interface TargetKey {
  readonly channel: AlertChannel;
  /** The endpoint's unique key (its `url` field). */
  readonly key: string;
  /** What answers show; for a webhook and e-mail the key itself. */
  readonly shown: string;
}

/** A key of its own for the hashes, so that no hash is ever made under a key that seals. */
const hashKey = (appKey: Buffer) => purposeKey(appKey, 'chat endpoint key');

/**
 * A URL as answers may show it: scheme, host and port, and its last four characters, which tell
 * two of an account's hooks (or ntfy topics) apart without giving away anything that could be used to post.
 */
export function redactedUrl(url: string): string {
  return `${new URL(url).origin}/…${url.slice(-4)}`;
}

/** ntfy's topic names (its server's `topicRegex`). */
const NTFY_TOPIC = /^[-_A-Za-z0-9]{1,64}$/;

/**
 * An ntfy topic URL's topic, the last segment of its path (`https://ntfy.sh/<topic>`, or a
 * self-hosted server's, under a path or not); null when the URL is not a topic's (no topic, a
 * query, a trailing slash).
 */
export function ntfyTopicOf(url: string): string | null {
  const u = new URL(url);
  if (u.search !== '') return null;
  const topic = u.pathname.slice(u.pathname.lastIndexOf('/') + 1);
  return NTFY_TOPIC.test(topic) ? topic : null;
}

/**
 * The sealed form of the targets with more than a URL: JSON with a fixed order of keys, so one
 * target always seals, and hashes, to the same text.
 */
const ntfySealed = z.object({ url: z.string(), token: z.string().nullable() });
const telegramSealed = z.object({ bot_token: z.string(), chat_id: z.string() });

/** The text an endpoint holds sealed: a hook's URL as it is, the other targets as JSON. */
export function sealedTarget(target: ChatTarget): string {
  if (target.channel === 'ntfy') return JSON.stringify({ url: target.url, token: target.token });
  if (target.channel === 'telegram') return JSON.stringify({ bot_token: target.botToken, chat_id: target.chatId });
  return target.url;
}

/** The target an endpoint's sealed text opens to; throws when it is not of the channel's form. */
export function openedTarget(channel: ChatChannel, sealed: string): ChatTarget {
  if (channel === 'ntfy') return { channel, ...ntfySealed.parse(JSON.parse(sealed)) };
  if (channel === 'telegram') {
    const t = telegramSealed.parse(JSON.parse(sealed));
    return { channel, botToken: t.bot_token, chatId: t.chat_id };
  }
  return { channel, url: sealed };
}

/**
 * A Telegram target as answers show it: the bot's id (the public part of its token, before the
 * colon) and the chat's last four characters, e.g. `telegram:bot123456789/…4567`.
 */
function shownTelegram(botToken: string, chatId: string): string {
  return `telegram:bot${botToken.slice(0, botToken.indexOf(':'))}/…${chatId.slice(-4)}`;
}

export function keyOf(target: AlertTarget, appKey: Buffer): TargetKey {
  if (target.channel === 'email') {
    const key = `mailto:${target.address}`;
    return { channel: 'email', key, shown: key };
  }
  if (target.channel === 'webhook') return { channel: 'webhook', key: target.url, shown: target.url };
  const hash = createHmac('sha256', hashKey(appKey))
    .update(`${target.channel}\n${sealedTarget(target)}`)
    .digest('hex');
  const shown = target.channel === 'telegram' ? shownTelegram(target.botToken, target.chatId) : redactedUrl(target.url);
  return { channel: target.channel, key: `${target.channel}:${hash}`, shown };
}

/** The address of an e-mail endpoint's key. */
export function addressOf(key: string): string {
  return key.replace(/^mailto:/, '');
}
