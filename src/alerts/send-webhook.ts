/**
 * One signed webhook POST (Standard Webhooks: https://www.standardwebhooks.com). node:http rather
 * than fetch, because only it takes an http.Agent, and the agent is what refuses private addresses
 * at connection time, after the DNS answer that is actually used.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { useAgent } from 'request-filtering-agent';
import { Webhook } from 'standardwebhooks';
import { WebhookDeliveryError, WebhookTargetRefusedError } from '../errors/index.js';

export interface WebhookSignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export interface WebhookRequest {
  url: string;
  secret: string;
  /** The message id: the same on every attempt, so a receiver can drop duplicates. */
  id: string;
  /** When this attempt is made: receivers refuse a timestamp more than 5 minutes off their clock. */
  timestamp: Date;
  body: string;
  timeoutMs: number;
  maxResponseBytes: number;
  allowPrivate: boolean;
}

export interface WebhookResponse {
  status: number;
  durationMs: number;
}

/** `whsec_` and 24 random bytes in base64, the form standardwebhooks reads. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function signWebhook(secret: string, id: string, timestamp: Date, body: string): WebhookSignatureHeaders {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, timestamp, body),
  };
}

/**
 * request-filtering-agent refuses with a plain Error (no class, no code), so its message is the
 * only thing that tells a refusal from a network failure; the send-webhook test pins it.
 */
const FILTER_REFUSAL = /^DNS lookup (\S+?)\(family:.*\bis not allowed\b/;

function deliveryFailure(err: Error): Error {
  const refused = FILTER_REFUSAL.exec(err.message);
  if (refused) {
    return new WebhookTargetRefusedError(`webhook_url resolves to ${refused[1]}, not a public address: refused.`, { cause: err });
  }
  // "socket hang up" says nothing without its code (ECONNRESET); "connect ECONNREFUSED …" has it.
  const code = (err as NodeJS.ErrnoException).code;
  const detail = code && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
  return new WebhookDeliveryError(`webhook delivery failed: ${detail}`, null, { cause: err });
}

/**
 * POSTs `req.body` once, signed. Resolves with whatever status arrived (redirects are not
 * followed: a 3xx is a status like any other); rejects with WebhookTargetRefusedError for an
 * address we do not call, and WebhookDeliveryError (status null) for a network failure or for no
 * complete answer within `timeoutMs`. At most `maxResponseBytes` of the answer are read, and
 * discarded: a receiver that streams without end must not hold the worker.
 */
export function sendWebhook(req: WebhookRequest): Promise<WebhookResponse> {
  const started = performance.now();
  const url = new URL(req.url);
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<WebhookResponse>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: { status: number } | { error: Error }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Nothing more is read either way; the socket is never reused (no keep-alive).
      request.destroy();
      if ('error' in outcome) reject(outcome.error);
      else resolve({ status: outcome.status, durationMs: Math.round(performance.now() - started) });
    };

    const request = transport.request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(req.body),
        'user-agent': 'shelfwatch-webhooks/1',
        ...signWebhook(req.secret, req.id, req.timestamp, req.body),
      },
      // agent: false gives a one-off plain agent.
      agent: req.allowPrivate ? false : useAgent(url.href),
    });
    const timer = setTimeout(() => {
      settle({ error: new WebhookDeliveryError(`webhook got no complete answer within ${req.timeoutMs} ms`, null) });
    }, req.timeoutMs);

    request.on('error', (err) => settle({ error: deliveryFailure(err) }));
    request.on('response', (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      if (req.maxResponseBytes <= 0) return settle({ status });
      res.on('data', (chunk: Buffer) => {
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
