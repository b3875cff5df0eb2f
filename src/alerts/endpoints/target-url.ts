/**
 * Where an endpoint's URL may point, on every channel that posts to one (a webhook, a chat
 * service's incoming webhook). The schema judges the URL as written; checkTargetUrl judges where
 * its host resolves now. Neither is the last word: DNS may answer otherwise at delivery, which is
 * why deliveries/send-webhook.ts filters again at connection time.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { isLoopbackHost } from '../../../config/parsers.js';
import { ENDPOINT_LOOKUP_TIMEOUT_MS } from '../../../config/alerts.js';
import { withTimeout } from '../../db/mongo.js';
import { describeClass, nonPublic } from './address-class.js';
import { WebhookTargetRefusedError } from '../../core/errors.js';
import { HostLookupsBusyError, resolveHost, type HostResolver, type ResolvedAddress } from './host-lookups.js';

export type { ResolvedAddress };

export const MAX_TARGET_URL_LENGTH = 2048;

export type TargetLookup = HostResolver;

/** The port a URL connects to: the one it names, or its scheme's. */
export function portOf(u: URL): number {
  return u.port === '' ? (u.protocol === 'http:' ? 80 : 443) : Number(u.port);
}

/**
 * Why `u`'s port is refused, or null: unless private targets are allowed (an intranet, tests, where
 * any port goes), a URL names one of ENDPOINT_ALLOWED_PORTS (443 by default), so the service cannot
 * be pointed at whatever else listens on a public host (mail, databases, admin ports).
 */
export function portRefusal(u: URL, allowPrivate: boolean, allowedPorts: readonly number[]): string | null {
  if (allowPrivate || allowedPorts.includes(portOf(u))) return null;
  const ports = allowedPorts.join(', ');
  return allowedPorts.length === 1
    ? `must use port ${ports} (this server's ENDPOINT_ALLOWED_PORTS).`
    : `must use one of the ports ${ports} (this server's ENDPOINT_ALLOWED_PORTS).`;
}

/**
 * A webhook URL, as the normalised `href`. http only with `allowPrivate` and only to loopback (a
 * local test receiver); credentials would be sent to, and logged by, whoever we call, and a
 * fragment never reaches the receiver, so both are refused rather than silently dropped. The port
 * must be one of `allowedPorts` unless `allowPrivate` (portRefusal).
 */
export function targetUrlSchema(allowPrivate: boolean, allowedPorts: readonly number[] = [443]) {
  return z.string({ error: 'must be a string.' }).transform((v, ctx): string => {
    const refuse = (message: string) => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    if (v.length > MAX_TARGET_URL_LENGTH) return refuse(`must not be greater than ${MAX_TARGET_URL_LENGTH} characters.`);
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
    const port = portRefusal(u, allowPrivate, allowedPorts);
    if (port) return refuse(port);
    // Percent-encoding can make the normalised form longer than what was written.
    if (u.href.length > MAX_TARGET_URL_LENGTH) return refuse(`must not be greater than ${MAX_TARGET_URL_LENGTH} characters.`);
    return u.href;
  });
}

export interface TargetCheckOptions {
  readonly allowPrivate: boolean;
  /** Where names resolve: the account's HostLookups (host-lookups.ts); resolveHost alone by default. */
  readonly lookup?: TargetLookup;
  /** How long to wait for the DNS answer (ENDPOINT_LOOKUP_TIMEOUT_MS). */
  readonly lookupTimeoutMs?: number;
}

/**
 * The addresses `url`'s host resolves to; WebhookTargetRefusedError when it resolves to none or not
 * within the timeout, or (unless `allowPrivate`) when any of them is not public unicast: a client
 * connecting may pick any of them, so one private answer among public ones is enough to refuse.
 * The refusal names the class of address, never the address: the answer must not tell a caller
 * what a name resolves to inside our network.
 */
export async function checkTargetUrl(url: string, opts: TargetCheckOptions): Promise<ResolvedAddress[]> {
  const hostname = new URL(url).hostname;
  const host = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  let addresses: ResolvedAddress[];
  const family = isIP(host);
  if (family !== 0) {
    addresses = [{ address: host, family }];
  } else {
    const timeoutMs = opts.lookupTimeoutMs ?? ENDPOINT_LOOKUP_TIMEOUT_MS;
    const within = timeoutMs % 1_000 === 0 ? `${timeoutMs / 1_000} s` : `${timeoutMs} ms`;
    const late = () => new WebhookTargetRefusedError(`webhook_url's host ${host} does not resolve in time (within ${within}).`);
    try {
      // The resolver cancels its own queries at the same deadline; this bounds any other lookup.
      addresses = await withTimeout((opts.lookup ?? ((h: string) => resolveHost(h)))(host), timeoutMs, 'DNS lookup', late);
    } catch (err) {
      if (err instanceof WebhookTargetRefusedError || err instanceof HostLookupsBusyError) throw err;
      if ((err as NodeJS.ErrnoException).code === 'ECANCELLED' || (err as NodeJS.ErrnoException).code === 'ETIMEOUT') throw late();
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
