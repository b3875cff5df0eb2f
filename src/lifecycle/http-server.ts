import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import { once } from './once.js';

export interface RunningServer {
  readonly server: Server;
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish, then drops idle keep-alive sockets. */
  close(): Promise<void>;
}

const CLIENT_ERRORS: Readonly<Record<string, readonly [number, string]>> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout'],
};

/**
 * Node answers a request it cannot parse (a URL or headers past its limits, a malformed line) by
 * itself, with no body; this gives that answer the API's error shape, `{message}` as JSON.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'Bad Request'];
  const body = JSON.stringify({ message: `${reason}.` });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

export async function listen(app: Express, port: number, host: string): Promise<RunningServer> {
  const server = createServer(app);
  // Longer than a typical load balancer's idle timeout, so the proxy closes first, not us.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 120_000;
  server.on('clientError', answerClientError);
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
