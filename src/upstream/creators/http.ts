/**
 * One HTTP POST through a keep-alive undici dispatcher, bounded by a per-call timeout. No retries:
 * the queue retries, with its own backoff and the country's budget in view.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { UpstreamUnavailableError } from '../../core/errors.js';
import { VERSION } from '../../version.js';
import { tellWhenSent, type OnSent } from './sent-at.js';

/**
 * Sent on every request, token and catalog alike: it tells the operators of the service (and of any
 * proxy on the way) which program and version made a call, should one of ours misbehave.
 */
export const USER_AGENT = `shelfwatch/${VERSION}`;

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Parsed JSON, or undefined when the body was empty or not JSON. */
  readonly json: unknown;
  readonly text: string;
}

/** A dispatcher that keeps connections open between calls (one TLS handshake, not one per call). */
export function createKeepAliveAgent(): Agent {
  return new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 120_000, connections: 32 });
}

export async function post(
  dispatcher: Dispatcher,
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  onSent?: OnSent,
): Promise<HttpAnswer> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await tellWhenSent(onSent, () =>
      request(url, { method: 'POST', headers: { ...headers, 'user-agent': USER_AGENT }, body, dispatcher, signal }),
    );
    const text = await res.body.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, headers: res.headers, json, text };
  } catch (err) {
    if (signal.aborted)
      throw new UpstreamUnavailableError(`no answer from ${new URL(url).host} within ${timeoutMs} ms`, undefined, { cause: err });
    throw new UpstreamUnavailableError(`cannot reach ${new URL(url).host}: ${(err as Error).message}`, undefined, { cause: err });
  }
}

/** Retry-After in ms (delta-seconds or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.ceil(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
