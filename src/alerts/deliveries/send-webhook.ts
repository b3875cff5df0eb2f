/**
 * One signed webhook POST (Standard Webhooks: https://www.standardwebhooks.com). node:http rather
 * than fetch, because only it takes an http.Agent and a `lookup`, which is where private addresses
 * are refused at connection time, after the DNS answer that is actually used.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { useAgent } from 'request-filtering-agent';
import { Webhook } from 'standardwebhooks';
import { WebhookDeliveryError, WebhookTargetRefusedError } from '../../core/errors.js';
import { describeClass, nonPublic, type AddressClass } from '../endpoints/address-class.js';
import { portRefusal } from '../endpoints/target-url.js';
import { resolveHost, type HostResolver } from '../endpoints/host-lookups.js';

export type { HostResolver };

export interface WebhookSignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** One JSON POST to a URL an account gave (a webhook, a chat service's incoming webhook). */
export interface JsonPost {
  url: string;
  body: string;
  /** Sent beside content-type, content-length and user-agent. */
  headers?: Readonly<Record<string, string>>;
  timeoutMs: number;
  maxResponseBytes: number;
  allowPrivate: boolean;
  /** The ports a URL may name unless `allowPrivate` (ENDPOINT_ALLOWED_PORTS). */
  allowedPorts: readonly number[];
  /** Where names resolve: the account's HostLookups (resolveHost alone otherwise). */
  resolve?: HostResolver;
  /** Keep what is read of the answer (for a service whose status alone does not say what went wrong). */
  keepBody?: boolean;
}

export interface WebhookRequest extends Omit<JsonPost, 'headers'> {
  /**
   * The signing secret, or several: the endpoint's, then any an alert of before endpoints had. Each
   * signs, and the signatures go together in `webhook-signature`, so a receiver that knows any one verifies.
   */
  secret: string | readonly string[];
  /** The message id: the same on every attempt, so a receiver can drop duplicates. */
  id: string;
  /** When this attempt is made: receivers refuse a timestamp more than 5 minutes off their clock. */
  timestamp: Date;
}

export interface PostResponse {
  status: number;
  durationMs: number;
  /** The answer's Retry-After header, as sent; null when it had none. */
  retryAfter: string | null;
  /** With `keepBody`: what was read of the answer (at most `maxResponseBytes`), as UTF-8; else ''. */
  body: string;
}

/** The signature headers; several secrets give several `v1,…` signatures, space-separated as the standard says. */
export function signWebhook(secrets: string | readonly string[], id: string, timestamp: Date, body: string): WebhookSignatureHeaders {
  const all = typeof secrets === 'string' ? [secrets] : [...new Set(secrets)];
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': all.map((secret) => new Webhook(secret).sign(id, timestamp, body)).join(' '),
  };
}

const refusal = (c: AddressClass) =>
  new WebhookTargetRefusedError(`webhook_url resolves to ${describeClass(c)} at connection time: refused.`);

/**
 * request-filtering-agent refuses with a plain Error (no class, no code), so its message is the
 * only thing that tells a refusal from a network failure; the send-webhook test pins its form. Its
 * message names the address, which the delivery's record must not show: only the class is kept.
 */
export const FILTER_REFUSAL = /^DNS lookup (\S+?)\(family:.*\bis not allowed\b/;

function deliveryFailure(err: Error): Error {
  if (err instanceof WebhookTargetRefusedError) return err;
  const refused = FILTER_REFUSAL.exec(err.message);
  if (refused) {
    const error = refusal(nonPublic(refused[1]!) ?? { words: 'a non-public', embedded: false });
    return new WebhookTargetRefusedError(error.message, { cause: err });
  }
  // "socket hang up" says nothing without its code (ECONNRESET); "connect ECONNREFUSED …" has it.
  const code = (err as NodeJS.ErrnoException).code;
  const detail = code && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
  return new WebhookDeliveryError(`webhook delivery failed: ${detail}`, null, { cause: err });
}

const defaultResolver: HostResolver = (host) => resolveHost(host);

/**
 * A `lookup` for net.connect that resolves every address of the name (through `resolve`, never
 * getaddrinfo: host-lookups.ts) and, when `guard`, refuses the connection when any is not public
 * (address-class.ts), IPv6 forms that carry an IPv4 address included, which
 * request-filtering-agent judges by their IPv6 range alone (it lets `::7f00:1`, which is
 * 127.0.0.1, through).
 */
export function guardedLookup(resolve: HostResolver = defaultResolver, guard = true): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        for (const { address } of addresses) {
          const c = guard ? nonPublic(address) : null;
          if (c) return callback(refusal(c), '');
        }
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
        const usable = family === 0 ? addresses : addresses.filter((a) => a.family === family);
        if (usable.length === 0) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '');
        if (options.all) return callback(null, usable);
        return callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/**
 * The IPv6 ranges that carry an IPv4 address and that request-filtering-agent refuses whole (as
 * not unicast), public IPv4 inside included: it leaves them to guardedLookup and the literal check,
 * which judge the IPv4 address, and keeps judging everything else itself as a second line. (It
 * takes IPv4-compatible `::a.b.c.d` for unicast, so those need no entry here.)
 */
const CARRYING_IPV4 = ['::ffff:0:0/96', '::ffff:0:0:0/96', '64:ff9b::/96', '2002::/16'];

/** POSTs `req.body` once, signed (Standard Webhooks), as postJson does. */
export function sendWebhook(req: WebhookRequest): Promise<PostResponse> {
  const { secret, id, timestamp, ...post } = req;
  return postJson({ ...post, headers: { ...signWebhook(secret, id, timestamp, req.body) } });
}

/**
 * POSTs `req.body` once. Resolves with whatever status arrived (redirects are not followed: a 3xx
 * is a status like any other); rejects with WebhookTargetRefusedError for an address we do not
 * call, and WebhookDeliveryError (status null) for a network failure or for no complete answer
 * within `timeoutMs`. At most `maxResponseBytes` of the answer are read, and discarded unless
 * `keepBody`: a receiver that streams without end must not hold the worker.
 */
export function postJson(req: JsonPost): Promise<PostResponse> {
  const started = performance.now();
  const url = new URL(req.url);
  const transport = url.protocol === 'https:' ? https : http;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // A target stored before the port rule, or under another ENDPOINT_ALLOWED_PORTS, is judged again.
  const port = portRefusal(url, req.allowPrivate, req.allowedPorts);
  if (port) return Promise.reject(new WebhookTargetRefusedError(`webhook_url ${port}`));
  if (!req.allowPrivate && isIP(host) !== 0) {
    // net.connect does not call `lookup` for an address: the literal is judged here.
    const c = nonPublic(host);
    if (c) return Promise.reject(refusal(c));
  }
  return new Promise<PostResponse>((resolve, reject) => {
    let settled = false;
    const kept: Buffer[] = [];
    let retryAfter: string | null = null;
    const settle = (outcome: { status: number } | { error: Error }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Nothing more is read either way; the socket is never reused (no keep-alive).
      request.destroy();
      if ('error' in outcome) return reject(outcome.error);
      const body = Buffer.concat(kept).subarray(0, Math.max(0, req.maxResponseBytes)).toString('utf8');
      resolve({ status: outcome.status, durationMs: Math.round(performance.now() - started), retryAfter, body });
    };

    const request = transport.request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(req.body),
        'user-agent': 'shelfwatch-webhooks/1',
        ...req.headers,
      },
      // agent: false gives a one-off plain agent; the filtering one is made per request, with no keep-alive.
      agent: req.allowPrivate ? false : useAgent(url.href, { allowIPAddressList: CARRYING_IPV4 }),
      lookup: guardedLookup(req.resolve, !req.allowPrivate),
    });
    const timer = setTimeout(() => {
      settle({ error: new WebhookDeliveryError(`webhook got no complete answer within ${req.timeoutMs} ms`, null) });
    }, req.timeoutMs);

    request.on('error', (err) => settle({ error: deliveryFailure(err) }));
    request.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const after = res.headers['retry-after'];
      retryAfter = typeof after === 'string' ? after : null;
      let read = 0;
      if (req.maxResponseBytes <= 0) return settle({ status });
      res.on('data', (chunk: Buffer) => {
        if (req.keepBody) kept.push(chunk);
        read += chunk.length;
        if (read >= req.maxResponseBytes) settle({ status });
      });
      // The status arrived, so a body cut short still counts as an answer.
      res.on('end', () => settle({ status }));
      res.on('error', () => settle({ status }));
      res.on('close', () => settle({ status }));
    });
    request.end(req.body);
  });
}
