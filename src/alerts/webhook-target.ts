/**
 * Where a webhook may go. The schema judges the URL as written; checkWebhookTarget judges where its
 * host resolves now. Neither is the last word: DNS may answer otherwise at delivery, which is why
 * send-webhook.ts filters again at connection time.
 */
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { isLoopbackHost } from '../../config/parsers.js';
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

const RANGE_WORDS: Readonly<Record<string, string>> = {
  private: 'a private',
  loopback: 'a loopback',
  linkLocal: 'a link-local',
  uniqueLocal: 'a unique-local',
  carrierGradeNat: 'a carrier-grade NAT',
  multicast: 'a multicast',
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  reserved: 'a reserved',
};

/** Why `address` is not one we call, or undefined when it is public unicast. */
function nonPublic(address: string): string | undefined {
  let range: string;
  try {
    // process() turns ::ffff:a.b.c.d into a.b.c.d, so a mapped loopback is judged as loopback.
    range = ipaddr.process(address).range();
  } catch {
    return 'an unreadable';
  }
  return range === 'unicast' ? undefined : (RANGE_WORDS[range] ?? `a non-public (${range})`);
}

const systemLookup: WebhookLookup = (host) => dns.lookup(host, { all: true, verbatim: true });

/**
 * The addresses `url`'s host resolves to; WebhookTargetRefusedError when it resolves to none, or
 * (unless `allowPrivate`) when any of them is not public unicast: a client connecting may pick
 * any of them, so one private answer among public ones is enough to refuse.
 */
export async function checkWebhookTarget(url: string, opts: { allowPrivate: boolean; lookup?: WebhookLookup }): Promise<ResolvedAddress[]> {
  const hostname = new URL(url).hostname;
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  let addresses: ResolvedAddress[];
  const family = isIP(host);
  if (family !== 0) {
    addresses = [{ address: host, family }];
  } else {
    try {
      addresses = await (opts.lookup ?? systemLookup)(host);
    } catch (err) {
      throw new WebhookTargetRefusedError(`webhook_url's host ${host} does not resolve.`, { cause: err });
    }
  }
  if (addresses.length === 0) throw new WebhookTargetRefusedError(`webhook_url's host ${host} does not resolve.`);
  if (!opts.allowPrivate) {
    for (const { address } of addresses) {
      const what = nonPublic(address);
      if (what) throw new WebhookTargetRefusedError(`webhook_url resolves to ${address}, ${what} address: refused.`);
    }
  }
  return addresses;
}
