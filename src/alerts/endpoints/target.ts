/**
 * Where an alert delivers, and how its endpoint is keyed and shown. A chat service's webhook URL is
 * a credential (whoever holds it posts to the channel), so it is never stored or shown in the
 * clear: the endpoint is keyed by a hash of it under a key derived from APP_KEY, holds it sealed,
 * and answers show it redacted.
 */
import { createHmac } from 'node:crypto';
import { purposeKey } from '../../../config/app-key.js';
import { isChatChannel, type AlertChannel, type ChatChannel } from '../../models/alert.js';

export type AlertTarget =
  | { readonly channel: 'webhook'; readonly url: string }
  | { readonly channel: ChatChannel; readonly url: string }
  | { readonly channel: 'email'; readonly address: string };

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
 * two of an account's hooks apart without giving away anything that could be used to post.
 */
export function redactedUrl(url: string): string {
  return `${new URL(url).origin}/…${url.slice(-4)}`;
}

export function keyOf(target: AlertTarget, appKey: Buffer): TargetKey {
  if (target.channel === 'email') {
    const key = `mailto:${target.address}`;
    return { channel: 'email', key, shown: key };
  }
  if (!isChatChannel(target.channel)) return { channel: 'webhook', key: target.url, shown: target.url };
  const hash = createHmac('sha256', hashKey(appKey)).update(`${target.channel}\n${target.url}`).digest('hex');
  return { channel: target.channel, key: `${target.channel}:${hash}`, shown: redactedUrl(target.url) };
}

/** The address of an e-mail endpoint's key. */
export function addressOf(key: string): string {
  return key.replace(/^mailto:/, '');
}
