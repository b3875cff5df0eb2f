/**
 * What every channel answers for one attempt, so that the delivery job (jobs/deliver.ts) and the
 * test button judge them all alike: acknowledged, gone (the endpoint is disabled), or failed (retried).
 */
import type { AlertMessage } from './message.js';

export interface ChannelAnswer {
  /** The HTTP status; for e-mail the SMTP server's reply code (250: accepted). */
  readonly status: number;
  readonly durationMs: number;
  readonly verdict: 'ok' | 'gone' | 'failed';
  /** Why it is gone or failed, as the delivery's record says it; null when ok. */
  readonly reason: string | null;
  /** A failed attempt's receiver asked for this long a wait before the next (its Retry-After), in ms. */
  readonly retryAfterMs?: number | null;
}

/** A chat service's answer as its `reads` sees it. */
export interface ServiceAnswer {
  readonly status: number;
  /** What was read of the body (at most DELIVERY_MAX_RESPONSE_BYTES). */
  readonly body: string;
  /** The Retry-After header as sent; null when there was none. */
  readonly retryAfter: string | null;
}

/** What a service's answer says beyond its status: that the target is gone (in our words), or how long to wait. */
export interface AnswerReading {
  readonly gone?: string;
  readonly retryAfterMs?: number | null;
}

/** How a chat service's answers are judged: the statuses by which it says the target is gone, and more for some. */
export interface ChatAnswers {
  readonly name: string;
  /** Status → what it means, from the service's documentation; any other non-2xx is retried. */
  readonly gone: Readonly<Record<number, string>>;
  /**
   * Reads a non-2xx answer whose status alone does not tell (Telegram's 400 "chat not found"), and
   * its wait (a 429's Retry-After). Services without it are judged by the status alone, the body unread.
   */
  readonly reads?: (answer: ServiceAnswer) => AnswerReading;
}

/** A chat service's incoming webhook: the body it takes, and the statuses by which it says the hook is gone. */
export interface ChatService extends ChatAnswers {
  payload(message: AlertMessage): unknown;
}

/** One POST to a chat service whose request is more than a body to its hook's URL (ntfy, Telegram). */
export interface ChatRequest {
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: unknown;
}

/**
 * A Retry-After value (seconds, or an HTTP date: RFC 9110 §10.2.3) in ms from `now`; null when it
 * is neither or not in the future.
 */
export function retryAfterMs(value: string | null | undefined, now = Date.now()): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) > 0 ? Number(text) * 1_000 : null;
  const at = Date.parse(text);
  return Number.isNaN(at) || at <= now ? null : at - now;
}
