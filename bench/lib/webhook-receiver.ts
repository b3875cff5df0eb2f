/**
 * The webhook receiver of bench:tenants, in the benchmark's own process on loopback: `/ok` answers
 * 204 at once and notes when each `webhook-id` first arrived; `/fail` holds every request 2 s and
 * answers 500, the slow, failing receiver of the heavy account. The bench process only reads
 * headers and drains bodies here, so arrival times are not held up behind its own work.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onCleanup } from './infra.js';

/** How long the failing path holds a request before its 500. */
export const FAIL_AFTER_MS = 2_000;

export interface WebhookReceiver {
  readonly okUrl: string;
  readonly failUrl: string;
  /** webhook-id → epoch ms of its first arrival at `/ok`. */
  readonly arrivals: ReadonlyMap<string, number>;
  /** Requests each path got, retries and repeats included. */
  readonly counts: { ok: number; fail: number; other: number };
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const arrivals = new Map<string, number>();
  const counts = { ok: 0, fail: 0, other: 0 };
  const held = new Set<NodeJS.Timeout>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const at = Date.now();
    req.resume();
    if (req.method === 'POST' && req.url === '/ok') {
      counts.ok++;
      const id = req.headers['webhook-id'];
      if (typeof id === 'string' && !arrivals.has(id)) arrivals.set(id, at);
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && req.url === '/fail') {
      counts.fail++;
      const timer = setTimeout(() => {
        held.delete(timer);
        res.writeHead(500, { 'content-type': 'text/plain' }).end('failing on purpose');
      }, FAIL_AFTER_MS);
      held.add(timer);
      return;
    }
    counts.other++;
    res.writeHead(404).end();
  });
  // Many deliveries arrive at once: no request may wait for a socket of a small default backlog.
  server.maxConnections = 10_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  onCleanup('webhook receiver', async () => {
    for (const t of held) clearTimeout(t);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { okUrl: `http://127.0.0.1:${port}/ok`, failUrl: `http://127.0.0.1:${port}/fail`, arrivals, counts };
}
