/**
 * Tells the maker of a request when its headers went on the wire. A request first waits for a
 * connection (a new one's TCP and TLS handshakes take round trips, and keep-alive connections are
 * opened afresh after a quiet spell), so the moment a call is handed to undici is not when the
 * upstream's clock starts reading it. undici publishes both moments on its diagnostics channels
 * (`undici:request:create`, `undici:client:sendHeaders`); the request object ties the second to
 * the caller, who is known at the first through the async context it was made in.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';

/** Hears that a request's headers went on the wire. */
export type OnSent = () => void;

/**
 * Awaited right before a request is handed to undici (the quota governor's permit); what it
 * returns hears when the request actually went.
 */
export type BeforeSend = () => Promise<OnSent | undefined>;

const makers = new AsyncLocalStorage<OnSent>();
const unsent = new WeakMap<object, OnSent>();
let listening = false;

function requestOf(message: unknown): object | undefined {
  const request = (message as { request?: unknown } | null)?.request;
  return typeof request === 'object' && request !== null ? request : undefined;
}

function listen(): void {
  if (listening) return;
  listening = true;
  subscribe('undici:request:create', (message) => {
    const onSent = makers.getStore();
    const request = requestOf(message);
    if (onSent && request) unsent.set(request, onSent);
  });
  subscribe('undici:client:sendHeaders', (message) => {
    const request = requestOf(message);
    const onSent = request && unsent.get(request);
    if (!onSent) return;
    unsent.delete(request);
    // undici's write path is no place for a listener's fault.
    try {
      onSent();
    } catch {
      /* the caller's own bookkeeping; the request goes on */
    }
  });
}

/** Runs `send` (which makes one undici request) so that `onSent` hears when its headers went out. */
export function tellWhenSent<T>(onSent: OnSent | undefined, send: () => T): T {
  if (!onSent) return send();
  listen();
  return makers.run(onSent, send);
}
