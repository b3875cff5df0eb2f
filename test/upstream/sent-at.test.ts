import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../../src/upstream/creators/http.js';
import { until } from '../helpers/until.js';

/**
 * A caller hears when its request's headers went on the wire, not when it handed the request over:
 * here every new connection waits until the test lets it open, as a TCP and TLS handshake would.
 */
let server: Server;
let url: string;
const events: string[] = [];
const connects: Array<() => void> = [];
let holdConnects = true;
const connect = buildConnector({});
const agent = new Agent({
  keepAliveTimeout: 30_000,
  connections: 4,
  connect: (opts, cb) => {
    if (holdConnects) connects.push(() => connect(opts, cb));
    else connect(opts, cb);
  },
});

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    events.push(`arrived ${req.headers['x-call']}`);
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/catalog`;
});
afterAll(async () => {
  await agent.close();
  await new Promise((resolve) => server.close(resolve));
});

function call(name: string, heard = true): Promise<unknown> {
  return post(agent, url, { 'x-call': name }, '{}', 5_000, heard ? () => events.push(`sent ${name}`) : undefined);
}

describe('when a request went', () => {
  it('is told when its headers go out, after the wait for a connection', async () => {
    events.length = 0;
    const first = call('a');
    await until('the connection is asked for', async () => connects.length === 1 || undefined);
    expect(events).toEqual([]);
    connects.shift()!();
    await first;
    expect(events).toEqual(['sent a', 'arrived a']);

    // Only the caller who asked is told.
    events.length = 0;
    holdConnects = false;
    await call('b', false);
    await call('c');
    expect(events).toEqual(['arrived b', 'sent c', 'arrived c']);
  });

  it('tells each of calls in flight together of its own request, once', async () => {
    events.length = 0;
    holdConnects = false;
    await Promise.all([call('d'), call('e')]);
    expect(events.filter((e) => e.startsWith('sent')).sort()).toEqual(['sent d', 'sent e']);
    for (const name of ['d', 'e']) expect(events.indexOf(`sent ${name}`)).toBeLessThan(events.indexOf(`arrived ${name}`));
  });
});
