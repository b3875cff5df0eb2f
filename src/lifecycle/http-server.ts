import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { once } from './once.js';

export interface RunningServer {
  readonly server: Server;
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish, then drops idle keep-alive sockets. */
  close(): Promise<void>;
}

export async function listen(app: Express, port: number, host: string): Promise<RunningServer> {
  const server = createServer(app);
  // Longer than a typical load balancer's idle timeout, so the proxy closes first, not us.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Responses in flight when we start closing must not leave their keep-alive socket open behind
  // them, or close() would wait for the client to hang up.
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  server.on('request', (_req, res: ServerResponse) => {
    if (draining && !res.headersSent) res.setHeader('Connection', 'close');
    inFlight.add(res);
    res.once('close', () => {
      inFlight.delete(res);
      if (draining) setImmediate(() => server.closeIdleConnections());
    });
  });
  const { port: bound } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    server,
    url: `http://${shownHost}:${bound}`,
    close: once(
      () =>
        new Promise<void>((resolve, reject) => {
          draining = true;
          for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
          server.close((err) => (err ? reject(err) : resolve()));
          // Idle keep-alive sockets would hold close() open; busy ones finish their request first.
          server.closeIdleConnections();
        }),
    ),
  };
}
