import { pbkdf2 } from 'node:crypto';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostLookups, HostLookupsBusyError, isLocalhostName, resolveHost } from '../../src/alerts/endpoints/host-lookups.js';
import { checkTargetUrl } from '../../src/alerts/endpoints/target-url.js';
import { WebhookTargetRefusedError } from '../../src/core/errors.js';
import { until } from '../helpers/until.js';

/**
 * Lookups of account-named hosts against a DNS server on loopback that reads every query and never
 * answers: they end by their own deadline, a few per account at once, and hold none of libuv's
 * threads meanwhile (getaddrinfo would hold one each until the system resolver gave up).
 */
let silent: dgram.Socket;
let server: string;
let queries = 0;

beforeAll(async () => {
  silent = dgram.createSocket('udp4');
  silent.on('message', () => queries++);
  silent.bind(0, '127.0.0.1');
  await once(silent, 'listening');
  server = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
});

afterAll(() => silent?.close());

const settled = (p: Promise<unknown>) =>
  p.then(
    () => ({ ok: true as const, at: Date.now() }),
    (err: unknown) => ({ ok: false as const, err, at: Date.now() }),
  );

describe('resolveHost', () => {
  it('ends a lookup the server never answers at its deadline, having asked it', async () => {
    const before = queries;
    const started = Date.now();
    const err = await resolveHost('hooks.example.com', { tryTimeoutMs: 5_000, tries: 4, deadlineMs: 400, servers: [server] }).catch(
      (e: unknown) => e,
    );
    const took = Date.now() - started;
    expect((err as NodeJS.ErrnoException).code).toBe('ECANCELLED');
    expect(took).toBeGreaterThanOrEqual(350);
    expect(took).toBeLessThan(2_000);
    expect(queries).toBeGreaterThan(before);
  });

  it('answers address literals and localhost names without DNS', async () => {
    const opts = { tryTimeoutMs: 5_000, tries: 1, deadlineMs: 5_000, servers: [server] };
    const before = queries;
    await expect(resolveHost('localhost', opts)).resolves.toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    await expect(resolveHost('api.LOCALHOST.', opts)).resolves.toHaveLength(2);
    await expect(resolveHost('93.184.216.34', opts)).resolves.toEqual([{ address: '93.184.216.34', family: 4 }]);
    await expect(resolveHost('::1', opts)).resolves.toEqual([{ address: '::1', family: 6 }]);
    expect(queries).toBe(before);
    expect(isLocalhostName('localhost.example.com')).toBe(false);
  });
});

describe('checkTargetUrl through HostLookups', () => {
  it('refuses a host whose DNS server never answers, by the timeout, as a 422 would say it', async () => {
    const lookups = new HostLookups({ tryTimeoutMs: 200, tries: 2, deadlineMs: 600, perAccount: 4, servers: [server] });
    const started = Date.now();
    const err = await checkTargetUrl('https://hooks.example.com/x', {
      allowPrivate: false,
      lookup: lookups.forAccount('a'),
      lookupTimeoutMs: 600,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookTargetRefusedError);
    expect((err as Error).message).toBe("webhook_url's host hooks.example.com does not resolve in time (within 600 ms).");
    expect(Date.now() - started).toBeLessThan(2_000);
    // The resolver cancels its queries at the same deadline, and frees the account's place.
    await until('place freed', async () => lookups.busy('a') === 0, 1_000, 20);
  });

  it('refuses localhost as loopback unless private targets are allowed', async () => {
    const lookups = new HostLookups({ tryTimeoutMs: 200, tries: 1, deadlineMs: 600, perAccount: 4, servers: [server] });
    await expect(checkTargetUrl('https://localhost/x', { allowPrivate: false, lookup: lookups.forAccount('a') })).rejects.toThrow(
      /resolves to a loopback address: refused/,
    );
    await expect(checkTargetUrl('https://localhost:8443/x', { allowPrivate: true, lookup: lookups.forAccount('a') })).resolves.toHaveLength(
      2,
    );
  });

  it('keeps libuv’s threads free: file and crypto work finishes while lookups hang', async () => {
    const lookups = new HostLookups({ tryTimeoutMs: 5_000, tries: 4, deadlineMs: 2_000, perAccount: 4, servers: [server] });
    // More hanging lookups than libuv has threads (4 by default): getaddrinfo would take them all.
    const hanging = ['a', 'b', 'c'].flatMap((account) =>
      [1, 2, 3, 4].map((n) => settled(lookups.forAccount(account)(`h${n}.${account}.example.com`))),
    );
    let firstLookupEnded = Number.POSITIVE_INFINITY;
    void Promise.race(hanging).then((r) => (firstLookupEnded = r.at));
    const pool = await settled(
      Promise.all([
        ...Array.from({ length: 16 }, () => readFile(new URL(import.meta.url))),
        ...Array.from({ length: 4 }, () => promisify(pbkdf2)('x', 'salt', 1_000, 32, 'sha256')),
      ]),
    );
    expect(pool.ok).toBe(true);
    expect(pool.at).toBeLessThan(firstLookupEnded);
    const ends = await Promise.all(hanging);
    for (const end of ends) expect(end.ok).toBe(false);
  });

  it('runs at most perAccount lookups of one account at once; one waiting past the deadline is refused with 429', async () => {
    const lookups = new HostLookups({ tryTimeoutMs: 5_000, tries: 4, deadlineMs: 400, perAccount: 1, servers: [server] });
    const a = lookups.forAccount('a');
    const runs = [settled(a('one.example.com')), settled(a('two.example.com')), settled(a('three.example.com'))];
    const other = settled(lookups.forAccount('b')('other.example.com'));
    expect(lookups.busy('a')).toBe(1);
    expect(lookups.busy('b')).toBe(1);
    const [one, two, three] = (await Promise.all(runs)) as { ok: boolean; err?: unknown }[];
    expect((one!.err as NodeJS.ErrnoException).code).toBe('ECANCELLED');
    for (const waited of [two!, three!]) {
      expect(waited.err).toBeInstanceOf(HostLookupsBusyError);
      expect((waited.err as HostLookupsBusyError).status).toBe(429);
    }
    expect((await other).ok).toBe(false);
    expect(lookups.busy('a')).toBe(0);
  });
});
