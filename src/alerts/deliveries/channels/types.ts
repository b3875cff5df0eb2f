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
}

/** A chat service's incoming webhook: the body it takes, and the statuses by which it says the hook is gone. */
export interface ChatService {
  readonly name: string;
  payload(message: AlertMessage): unknown;
  /** Status → what it means, from the service's documentation; any other non-2xx is retried. */
  readonly gone: Readonly<Record<number, string>>;
}
