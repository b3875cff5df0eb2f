import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { FILTER_REFUSAL, guardedLookup, sendWebhook, signWebhook, type WebhookRequest } from '../../src/alerts/deliveries/send-webhook.js';
import { generateWebhookSecret } from '../../src/alerts/endpoints/endpoint.js';
import http from 'node:http';
import { useAgent } from 'request-filtering-agent';
import { WebhookDeliveryError, WebhookTargetRefusedError } from '../../src/core/errors.js';

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real receiver on 127.0.0.1; `answer` gets each request once its body has arrived. */
async function startReceiver(answer: (res: ServerResponse, received: Received) => void) {
  const received: Received[] = [];
  let connections = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const r = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      received.push(r);
      answer(res, r);
    });
  });
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    server,
    received,
    connections: () => connections,
    url: `http://127.0.0.1:${port}/hook`,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

describe('sendWebhook', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  const secret = generateWebhookSecret();
  const body = JSON.stringify({ type: 'price.changed', data: { asin: 'B000000001', price: 1234, title: 'Käse – 寿司' } });
  const request = (url: string, over: Partial<WebhookRequest> = {}): WebhookRequest => ({
    url,
    secret,
    id: 'msg_2f6c1e0a',
    timestamp: new Date(),
    body,
    timeoutMs: 5_000,
    maxResponseBytes: 64 * 1024,
    allowPrivate: true,
    allowedPorts: [443],
    ...over,
  });

  it('makes secrets standardwebhooks reads: whsec_ and 24 random bytes', () => {
    const a = generateWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(a.slice('whsec_'.length), 'base64')).toHaveLength(24);
    expect(generateWebhookSecret()).not.toBe(a);
    const headers = signWebhook(a, 'msg_1', new Date(1_700_000_000_999), '{}');
    expect(headers['webhook-timestamp']).toBe('1700000000');
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  it('POSTs the JSON body with the three signature headers, which the receiver verifies', async () => {
    receiver = await startReceiver((res) => res.writeHead(204).end());
    const result = await sendWebhook(request(receiver.url));
    expect(result.status).toBe(204);
    expect(result.durationMs).toBeGreaterThanOrEqual(0);

    expect(receiver.received).toHaveLength(1);
    const got = receiver.received[0]!;
    expect(got).toMatchObject({ method: 'POST', url: '/hook', body });
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['user-agent']).toBe('shelfwatch-webhooks/1');
    expect(got.headers['webhook-id']).toBe('msg_2f6c1e0a');
    expect(got.headers['webhook-timestamp']).toMatch(/^\d+$/);
    const headers = got.headers as Record<string, string>;
    expect(new Webhook(secret).verify(got.body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateWebhookSecret()).verify(got.body, headers)).toThrow(WebhookVerificationError);
    expect(() => new Webhook(secret).verify(got.body.replace('1234', '1235'), headers)).toThrow(WebhookVerificationError);
  });

  it.each([200, 410, 500])('passes status %i through', async (status) => {
    receiver = await startReceiver((res) => res.writeHead(status, { 'content-type': 'text/plain' }).end('answer'));
    await expect(sendWebhook(request(receiver.url))).resolves.toMatchObject({ status });
  });

  it('does not follow a redirect: a 302 is a status like any other', async () => {
    receiver = await startReceiver((res, got) => {
      if (got.url === '/hook') res.writeHead(302, { location: '/elsewhere' }).end();
      else res.writeHead(200).end();
    });
    await expect(sendWebhook(request(receiver.url))).resolves.toMatchObject({ status: 302 });
    expect(receiver.received.map((r) => r.url)).toEqual(['/hook']);
  });

  it('gives up on a receiver that never answers after timeoutMs', async () => {
    receiver = await startReceiver(() => undefined);
    const err = await sendWebhook(request(receiver.url, { timeoutMs: 300 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookDeliveryError);
    expect((err as WebhookDeliveryError).status).toBeNull();
    expect((err as Error).message).toMatch(/within 300 ms/);
  });

  it('counts reading the answer in the timeout: a status then a body that never ends in time', async () => {
    receiver = await startReceiver((res) => {
      res.writeHead(200);
      res.write('partial');
    });
    const err = await sendWebhook(request(receiver.url, { timeoutMs: 300 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookDeliveryError);
    expect((err as Error).message).toMatch(/within 300 ms/);
  });

  it('stops reading an endless answer at maxResponseBytes and closes the connection', async () => {
    let closed!: Promise<unknown>;
    receiver = await startReceiver((res) => {
      closed = once(res, 'close');
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
      };
      res.on('drain', pump);
      pump();
    });
    // Without the cap this would end in the timeout, a rejection.
    const result = await sendWebhook(request(receiver.url, { maxResponseBytes: 32 * 1024, timeoutMs: 5_000 }));
    expect(result.status).toBe(200);
    await closed;
  });

  it('turns a refused connection into a WebhookDeliveryError with the cause', async () => {
    const gone = await startReceiver(() => undefined);
    const url = gone.url;
    await gone.close();
    const err = await sendWebhook(request(url)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookDeliveryError);
    expect((err as WebhookDeliveryError).status).toBeNull();
    expect((err as Error).cause).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it.each([
    ['an IP literal', (url: string) => url],
    ['a name resolving to loopback', (url: string) => url.replace('127.0.0.1', 'localhost')],
    ['an IPv4-mapped IPv6 literal', (url: string) => url.replace('127.0.0.1', '[::ffff:127.0.0.1]')],
  ])('refuses loopback (%s) at connection time unless private targets are allowed', async (_what, toUrl) => {
    receiver = await startReceiver((res) => res.writeHead(200).end());
    const port = Number(new URL(receiver.url).port);
    const err = await sendWebhook(request(toUrl(receiver.url), { allowPrivate: false, allowedPorts: [port] })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookTargetRefusedError);
    expect((err as Error).message).toMatch(
      /^webhook_url resolves to a loopback address( \(an IPv4 address inside an IPv6 one\))? at connection time: refused\.$/,
    );
    expect((err as Error).message).not.toMatch(/127\.0\.0\.1|::ffff/);
    expect(receiver.received).toHaveLength(0);
    expect(receiver.connections()).toBe(0);
  });
});

describe('the port rule at connection time', () => {
  it('refuses a port outside ENDPOINT_ALLOWED_PORTS before any lookup or connection, unless private targets are allowed', async () => {
    const receiver = await startReceiver((res) => res.writeHead(204).end());
    try {
      const base = {
        secret: generateWebhookSecret(),
        id: 'msg_port',
        timestamp: new Date(),
        body: '{}',
        timeoutMs: 5_000,
        maxResponseBytes: 1_024,
      };
      let looked = 0;
      const resolve = async () => {
        looked++;
        return [{ address: '93.184.216.34', family: 4 }];
      };
      const err = await sendWebhook({
        ...base,
        url: 'https://example.com:8443/hook',
        allowPrivate: false,
        allowedPorts: [443],
        resolve,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WebhookTargetRefusedError);
      expect((err as Error).message).toBe("webhook_url must use port 443 (this server's ENDPOINT_ALLOWED_PORTS).");
      expect(looked).toBe(0);
      // Private targets allowed: any port (the loopback receiver's).
      await expect(sendWebhook({ ...base, url: receiver.url, allowPrivate: true, allowedPorts: [443] })).resolves.toMatchObject({
        status: 204,
      });
    } finally {
      await receiver.close();
    }
  });
});

describe('the check at connection time', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  const secret = generateWebhookSecret();
  const post = (url: string, over: Partial<WebhookRequest> = {}) =>
    sendWebhook({
      url,
      secret,
      id: 'msg_connect',
      timestamp: new Date(),
      body: '{}',
      timeoutMs: 5_000,
      maxResponseBytes: 1_024,
      allowPrivate: false,
      // These are about addresses: whatever port the receiver got is allowed.
      allowedPorts: [Number(new URL(url).port || 443)],
      ...over,
    });

  it.each([
    ['IPv4-mapped', '::ffff:127.0.0.1'],
    ['IPv4-translated', '::ffff:0:7f00:1'],
    ['IPv4-compatible', '::7f00:1'],
    ['NAT64', '64:ff9b::7f00:1'],
    ['6to4', '2002:7f00:1::1'],
  ])('refuses a name resolving to a loopback address in %s form (%s), before connecting', async (_form, address) => {
    receiver = await startReceiver((res) => res.writeHead(200).end());
    const port = new URL(receiver.url).port;
    const resolve = async (): Promise<{ address: string; family: number }[]> => [{ address, family: 6 }];
    const err = await post(`http://hooks.test:${port}/hook`, { resolve }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookTargetRefusedError);
    expect((err as Error).message).toBe(
      'webhook_url resolves to a loopback address (an IPv4 address inside an IPv6 one) at connection time: refused.',
    );
    expect(receiver.connections()).toBe(0);
  });

  it.each(['[::7f00:1]', '[64:ff9b::7f00:1]', '[2002:7f00:1::1]', '[::ffff:0:7f00:1]'])(
    'refuses the literal %s without a connection',
    async (host) => {
      const err = await post(`http://${host}:9/hook`).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WebhookTargetRefusedError);
      expect((err as Error).message).toMatch(/^webhook_url resolves to a loopback address .* at connection time: refused\.$/);
    },
  );

  it('refuses when any address of the name is private, whatever its place', async () => {
    receiver = await startReceiver((res) => res.writeHead(200).end());
    const port = new URL(receiver.url).port;
    const resolve = async () => [
      { address: '127.0.0.1', family: 4 },
      { address: '93.184.216.34', family: 4 },
    ];
    await expect(post(`http://hooks.test:${port}/hook`, { resolve })).rejects.toThrow(/a loopback address at connection time/);
    expect(receiver.connections()).toBe(0);
  });

  it('signs with every secret given, so a receiver that knows any of them verifies', async () => {
    receiver = await startReceiver((res) => res.writeHead(204).end());
    const other = generateWebhookSecret();
    await post(receiver.url, { allowPrivate: true, secret: [secret, other] });
    const got = receiver.received[0]!;
    const headers = got.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(secret).verify(got.body, headers)).toEqual({});
    expect(new Webhook(other).verify(got.body, headers)).toEqual({});
    expect(() => new Webhook(generateWebhookSecret()).verify(got.body, headers)).toThrow(WebhookVerificationError);
  });
});

describe('guardedLookup', () => {
  const resolve = async () => [
    { address: '93.184.216.34', family: 4 },
    { address: '2606:2800:220:1::', family: 6 },
  ];
  const call = (options: Parameters<ReturnType<typeof guardedLookup>>[1]) =>
    new Promise<{ err: unknown; address: unknown; family: unknown }>((done) =>
      guardedLookup(resolve)('hooks.example.com', options, (err, address, family) => done({ err, address, family })),
    );

  it('answers as dns.lookup does: every address with `all`, else the first (of the family asked)', async () => {
    expect(await call({ all: true })).toMatchObject({ err: null, address: await resolve() });
    expect(await call({})).toMatchObject({ err: null, address: '93.184.216.34', family: 4 });
    expect(await call({ family: 6 })).toMatchObject({ err: null, address: '2606:2800:220:1::', family: 6 });
  });

  it('passes a resolver failure on as it is', async () => {
    const fail = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND x'), { code: 'ENOTFOUND' }));
    const err = await new Promise((done) => guardedLookup(fail)('x', {}, (e) => done(e)));
    expect(err).toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe('request-filtering-agent, the second line', () => {
  it('still refuses in the words FILTER_REFUSAL reads', async () => {
    const agent = useAgent('http://127.0.0.1/');
    const err = await new Promise<Error>((done) => {
      const req = http.request('http://127.0.0.1:9/hook', { agent }, () => done(new Error('connected')));
      req.on('error', done);
      req.end();
    });
    expect(FILTER_REFUSAL.exec(err.message)?.[1]).toBe('127.0.0.1');
  });
});
