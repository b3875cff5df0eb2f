import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** What the receiver answered. */
  readonly status: number;
  /** When the request arrived (its answer may come later: `delay`). */
  readonly at: number;
}

/** One scripted answer: its status, and headers and a body of its own ('ok' as text/plain otherwise). */
export interface ScriptedAnswer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

/**
 * A real HTTP receiver on loopback for webhook tests: records every request and answers each path
 * with the statuses scripted for it, then 200. Tests wait on its events, not on time.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  readonly #events = new EventEmitter();
  readonly #scripts = new Map<string, ScriptedAnswer[]>();
  readonly #delays = new Map<string, number>();
  readonly #bodies = new Map<string, string>();
  #server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const scripted = this.#scripts.get(path)?.shift();
        const status = scripted?.status ?? 200;
        const got = {
          method: req.method ?? '',
          path,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          status,
          at: Date.now(),
        };
        this.received.push(got);
        const answer = () => {
          if (res.destroyed) return;
          const headers = { 'content-type': 'text/plain', ...scripted?.headers };
          res.writeHead(status, headers).end(scripted?.body ?? this.#bodies.get(path) ?? 'ok');
        };
        const delay = this.#delays.get(path) ?? 0;
        if (delay > 0) setTimeout(answer, delay);
        else answer();
        this.#events.emit('request', got);
      });
    });
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  /** The next answers to `path`, in order; after them it answers 200. */
  script(path: string, statuses: number[]): void {
    this.#scripts.set(
      path,
      statuses.map((status) => ({ status })),
    );
  }

  /** The next answers to `path`, with their headers and bodies, in order; after them it answers 200. */
  answers(path: string, answers: readonly ScriptedAnswer[]): void {
    this.#scripts.set(path, [...answers]);
  }

  /** The body of every answer to `path` ('ok' otherwise). */
  answerBody(path: string, text: string): void {
    this.#bodies.set(path, text);
  }

  /** Answers `path` only `ms` after each request arrived (a slow receiver); the request counts on arrival. */
  delay(path: string, ms: number): void {
    this.#delays.set(path, ms);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Resolves once `path` has received `count` requests in all; rejects after `timeoutMs`. */
  waitFor(path: string, count: number, timeoutMs = 20_000): Promise<Received[]> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        if (this.at(path).length < count) return false;
        clearTimeout(timer);
        this.#events.off('request', check);
        resolve(this.at(path));
        return true;
      };
      const timer = setTimeout(() => {
        this.#events.off('request', check);
        reject(new Error(`${path}: ${this.at(path).length} of ${count} requests within ${timeoutMs} ms`));
      }, timeoutMs);
      if (!check()) this.#events.on('request', check);
    });
  }

  async close(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((r) => (this.#server ? this.#server.close(() => r()) : r()));
  }
}
