/**
 * Where a webhook may go. The schema judges the URL as written; checkWebhookTarget judges where its
 * host resolves now. Neither is the last word: DNS may answer otherwise at delivery, which is why
 * send-webhook.ts filters again at connection time.
 */
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { z } from 'zod';
import { isLoopbackHost } from '../../config/parsers.js';
import { WEBHOOK_LOOKUP_TIMEOUT_MS } from '../../config/alerts.js';
import { withTimeout } from '../db/mongo.js';
import { describeClass, nonPublic } from './address-class.js';
import { WebhookTargetRefusedError } from '../errors/index.js';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type WebhookLookup = (host: string) => Promise<ResolvedAddress[]>;

/**
 * A webhook URL, as the normalised `href`. http only with `allowPrivate` and only to loopback (a
 * local test receiver); credentials would be sent to, and logged by, whoever we call, and a
 * fragment never reaches the receiver, so both are refused rather than silently dropped.
 */
export function webhookUrlSchema(allowPrivate: boolean) {
  return z.string({ error: 'must be a string.' }).transform((v, ctx): string => {
    const refuse = (message: string) => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    if (v.length > MAX_WEBHOOK_URL_LENGTH) return refuse(`must not be greater than ${MAX_WEBHOOK_URL_LENGTH} characters.`);
    let u: URL;
    try {
      u = new URL(v);
    } catch {
      return refuse('must be a URL.');
    }
    const httpAllowed = allowPrivate && u.protocol === 'http:' && isLoopbackHost(u.hostname);
    if (u.protocol !== 'https:' && !httpAllowed) {
      return refuse(
        allowPrivate ? 'must be an https URL (http only to loopback: localhost, 127.0.0.0/8, [::1]).' : 'must be an https URL.',
      );
    }
    if (u.username !== '' || u.password !== '') return refuse('must not contain a user name or password.');
    // `hash` is '' for a bare trailing '#', which `href` still carries.
    if (u.href.includes('#')) return refuse('must not contain a fragment (#…).');
    // Percent-encoding can make the normalised form longer than what was written.
    if (u.href.length > MAX_WEBHOOK_URL_LENGTH) return refuse(`must not be greater than ${MAX_WEBHOOK_URL_LENGTH} characters.`);
    return u.href;
  });
}

const systemLookup: WebhookLookup = (host) => dns.lookup(host, { all: true, verbatim: true });

export interface TargetCheckOptions {
  readonly allowPrivate: boolean;
  readonly lookup?: WebhookLookup;
  /** How long to wait for the DNS answer (WEBHOOK_LOOKUP_TIMEOUT_MS). */
  readonly lookupTimeoutMs?: number;
}

/**
 * The addresses `url`'s host resolves to; WebhookTargetRefusedError when it resolves to none or not
 * within the timeout, or (unless `allowPrivate`) when any of them is not public unicast: a client
 * connecting may pick any of them, so one private answer among public ones is enough to refuse.
 * The refusal names the class of address, never the address: the answer must not tell a caller
 * what a name resolves to inside our network.
 */
export async function checkWebhookTarget(url: string, opts: TargetCheckOptions): Promise<ResolvedAddress[]> {
  const hostname = new URL(url).hostname;
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  let addresses: ResolvedAddress[];
  const family = isIP(host);
  if (family !== 0) {
    addresses = [{ address: host, family }];
  } else {
    const timeoutMs = opts.lookupTimeoutMs ?? WEBHOOK_LOOKUP_TIMEOUT_MS;
    const within = timeoutMs % 1_000 === 0 ? `${timeoutMs / 1_000} s` : `${timeoutMs} ms`;
    const late = () => new WebhookTargetRefusedError(`webhook_url's host ${host} does not resolve in time (within ${within}).`);
    try {
      // getaddrinfo cannot be cancelled; the lookup may finish later, unread.
      addresses = await withTimeout((opts.lookup ?? systemLookup)(host), timeoutMs, 'DNS lookup', late);
    } catch (err) {
      if (err instanceof WebhookTargetRefusedError) throw err;
      throw new WebhookTargetRefusedError(`webhook_url's host ${host} does not resolve.`, { cause: err });
    }
  }
  if (addresses.length === 0) throw new WebhookTargetRefusedError(`webhook_url's host ${host} does not resolve.`);
  if (!opts.allowPrivate) {
    for (const { address } of addresses) {
      const what = nonPublic(address);
      if (what) throw new WebhookTargetRefusedError(`webhook_url resolves to ${describeClass(what)}: refused.`);
    }
  }
  return addresses;
}
