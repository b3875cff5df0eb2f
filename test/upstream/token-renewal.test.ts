import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIAL_VERSIONS } from '../../src/upstream/creators/credentials.js';
import { TokenSource } from '../../src/upstream/creators/token.js';
import { createKeepAliveAgent } from '../../src/upstream/creators/http.js';
import { until } from '../helpers/until.js';

/**
 * A token endpoint on loopback whose answers the test releases one by one: a call may wait for a
 * token only when there is no valid one; renewals run beside the calls.
 */
let server: Server;
let url: string;
const held: ServerResponse[] = [];
let issued = 0;
const dispatcher = createKeepAliveAgent();

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => held.push(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});
afterAll(async () => {
  for (const res of held.splice(0)) res.destroy();
  await dispatcher.close();
  await new Promise((resolve) => server.close(resolve));
});

/** Answers the oldest held token request with a new token of `ttlS` seconds. */
async function release(ttlS: number): Promise<void> {
  await until('a token request', async () => held.length > 0 || undefined);
  const res = held.shift()!;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ access_token: `token-${++issued}`, token_type: 'bearer', expires_in: ttlS }));
}

function source(clock: { t: number }): TokenSource {
  return new TokenSource({
    credential: { id: 'id', secret: 'secret', version: CREDENTIAL_VERSIONS['3.1']!, tokenUrl: url },
    country: 'JP',
    dispatcher,
    timeoutMs: 5_000,
    now: () => clock.t,
  });
}

describe('token renewal', () => {
  it('is fetched ahead of the first call by warm(), and renewed in the background while the old token is valid', async () => {
    const clock = { t: 1_000_000 };
    const tokens = source(clock);
    tokens.warm();
    await release(60);
    expect(await tokens.get()).toBe('token-1');
    expect(tokens.requests).toBe(1);

    // Inside the renewal margin (30 s before expiry): answered at once with the valid token while
    // the renewal waits on the endpoint, however many calls come meanwhile.
    clock.t += 40_000;
    expect(await tokens.get()).toBe('token-1');
    expect(await tokens.get()).toBe('token-1');
    expect(tokens.requests).toBe(2);
    await release(60);
    await until('the renewed token', async () => ((await tokens.get()) === 'token-2' ? true : undefined));

    // Expired with no renewal done: the call waits for the new token.
    clock.t += 70_000;
    const waiting = tokens.get();
    await release(60);
    expect(await waiting).toBe('token-3');
    expect(tokens.requests).toBe(3);
  });

  it('a failed background renewal keeps the valid token and is tried again a little later', async () => {
    const clock = { t: 5_000_000 };
    const tokens = source(clock);
    const first = tokens.get();
    await release(60);
    expect(await first).toBe(`token-${issued}`);
    const valid = `token-${issued}`;
    clock.t += 40_000;
    expect(await tokens.get()).toBe(valid);
    await until('the renewal request', async () => held.length > 0 || undefined);
    const res = held.shift()!;
    res.writeHead(503).end();
    // Each look moves the clock a second on: the valid token answers every time, and the renewal
    // is tried again only after its pause.
    const failedAt = clock.t;
    const answers = new Set<string>();
    await until('the renewal tried again', async () => {
      clock.t += 1_000;
      answers.add(await tokens.get());
      return held.length > 0 || undefined;
    });
    expect([...answers]).toEqual([valid]);
    expect(clock.t - failedAt).toBeGreaterThanOrEqual(5_000);
    expect(tokens.requests).toBe(3);
    await release(60);
    await until('the renewed token', async () => ((await tokens.get()) !== valid ? true : undefined));
  });
});
