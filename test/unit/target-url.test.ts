import { describe, expect, it } from 'vitest';
import { checkTargetUrl, targetUrlSchema, type ResolvedAddress } from '../../src/alerts/endpoints/target-url.js';
import { WebhookTargetRefusedError } from '../../src/core/errors.js';
import { embeddedIPv4, nonPublic } from '../../src/alerts/endpoints/address-class.js';
import { ENDPOINT_LOOKUP_TIMEOUT_MS } from '../../config/alerts.js';
import ipaddr from 'ipaddr.js';

const firstMessage = (allowPrivate: boolean, input: unknown) => {
  const r = targetUrlSchema(allowPrivate).safeParse(input);
  return r.success ? undefined : r.error.issues[0]?.message;
};

describe('targetUrlSchema', () => {
  it.each([
    ['https://example.com/hook', 'https://example.com/hook'],
    ['https://EXAMPLE.com:443/a b?x=1', 'https://example.com/a%20b?x=1'],
    ['  https://example.com  ', 'https://example.com/'],
  ])('accepts %j as %j', (input, href) => {
    expect(targetUrlSchema(false).parse(input)).toBe(href);
  });

  it('takes only ENDPOINT_ALLOWED_PORTS (443 by default), and any port where private targets are allowed', () => {
    expect(firstMessage(false, 'https://example.com:8443/')).toBe("must use port 443 (this server's ENDPOINT_ALLOWED_PORTS).");
    expect(firstMessage(false, 'https://example.com:25/')).toBe("must use port 443 (this server's ENDPOINT_ALLOWED_PORTS).");
    expect(targetUrlSchema(false, [443, 8443]).parse('https://example.com:8443/')).toBe('https://example.com:8443/');
    expect(targetUrlSchema(false, [443, 8443]).safeParse('https://example.com:9000/').error?.issues[0]?.message).toBe(
      "must use one of the ports 443, 8443 (this server's ENDPOINT_ALLOWED_PORTS).",
    );
    expect(targetUrlSchema(true).parse('https://example.com:8443/')).toBe('https://example.com:8443/');
    expect(targetUrlSchema(true).parse('http://127.0.0.1:4000/hook')).toBe('http://127.0.0.1:4000/hook');
  });

  it.each([
    ['http://example.com/hook', 'must be an https URL.'],
    ['http://127.0.0.1:8080/hook', 'must be an https URL.'],
    ['javascript:alert(1)', 'must be an https URL.'],
    ['ftp://example.com/', 'must be an https URL.'],
    ['not a url', 'must be a URL.'],
    ['', 'must be a URL.'],
    ['https://user:pass@example.com/', 'must not contain a user name or password.'],
    ['https://user@example.com/', 'must not contain a user name or password.'],
    ['https://example.com/#x', 'must not contain a fragment (#…).'],
    ['https://example.com/#', 'must not contain a fragment (#…).'],
    [`https://example.com/${'a'.repeat(2048)}`, 'must not be greater than 2048 characters.'],
    [`https://example.com/${' '.repeat(1000)}x`, 'must not be greater than 2048 characters.'],
    [42, 'must be a string.'],
    [null, 'must be a string.'],
    [undefined, 'must be a string.'],
  ])('refuses %j: %s', (input, message) => {
    expect(firstMessage(false, input)).toBe(message);
  });

  it('takes http only to loopback, and only when private targets are allowed', () => {
    const allowed = targetUrlSchema(true);
    expect(allowed.parse('http://127.0.0.1:8080/hook')).toBe('http://127.0.0.1:8080/hook');
    expect(allowed.parse('http://127.1/hook')).toBe('http://127.0.0.1/hook');
    expect(allowed.parse('http://localhost/hook')).toBe('http://localhost/hook');
    expect(allowed.parse('http://[::1]:9/hook')).toBe('http://[::1]:9/hook');
    expect(allowed.parse('https://10.0.0.1/hook')).toBe('https://10.0.0.1/hook');
    for (const url of ['http://10.0.0.1/hook', 'http://example.com/hook', 'http://localhost.example.com/']) {
      expect(firstMessage(true, url)).toBe('must be an https URL (http only to loopback: localhost, 127.0.0.0/8, [::1]).');
    }
    expect(firstMessage(true, 'http://u:p@localhost/')).toBe('must not contain a user name or password.');
  });
});

describe('checkTargetUrl', () => {
  const resolvingTo =
    (...addresses: string[]) =>
    async (): Promise<ResolvedAddress[]> =>
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

  it.each([
    ['10.0.0.1', 'a private'],
    ['172.16.5.4', 'a private'],
    ['192.168.1.1', 'a private'],
    ['127.0.0.1', 'a loopback'],
    ['127.8.9.10', 'a loopback'],
    ['169.254.169.254', 'a link-local'],
    ['::1', 'a loopback'],
    ['fc00::1', 'a unique-local'],
    ['fd12:3456::1', 'a unique-local'],
    ['fe80::1', 'a link-local'],
    ['::ffff:127.0.0.1', 'a loopback address (an IPv4 address inside an IPv6 one)'],
    ['::ffff:10.1.2.3', 'a private address (an IPv4 address inside an IPv6 one)'],
    ['0.0.0.0', 'an unspecified'],
    ['::', 'an unspecified'],
    ['100.64.0.1', 'a carrier-grade NAT'],
    ['224.0.0.1', 'a multicast'],
    ['ff02::1', 'a multicast'],
    ['255.255.255.255', 'a broadcast'],
    ['192.0.2.1', 'a reserved'],
  ])('refuses a host resolving to %s (%s address), naming the class but never the address', async (address, what) => {
    const err = await checkTargetUrl('https://hooks.example.com/x', { allowPrivate: false, lookup: resolvingTo(address) }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WebhookTargetRefusedError);
    const words = what.endsWith(')') ? what : `${what} address`;
    expect((err as Error).message).toBe(`webhook_url resolves to ${words}: refused.`);
    expect((err as Error).message).not.toContain(address);
  });

  it.each(['93.184.216.34', '2606:2800:220:1::', '::ffff:93.184.216.34'])('accepts a host resolving to %s', async (address) => {
    await expect(checkTargetUrl('https://hooks.example.com/x', { allowPrivate: false, lookup: resolvingTo(address) })).resolves.toEqual([
      { address, family: address.includes(':') ? 6 : 4 },
    ]);
  });

  it('refuses when one of several addresses is private, whatever its place', async () => {
    for (const order of [
      ['93.184.216.34', '10.0.0.1'],
      ['10.0.0.1', '93.184.216.34'],
      ['2606:2800:220:1::', '93.184.216.34', 'fe80::1'],
    ]) {
      await expect(checkTargetUrl('https://hooks.example.com/x', { allowPrivate: false, lookup: resolvingTo(...order) })).rejects.toThrow(
        WebhookTargetRefusedError,
      );
    }
  });

  it('judges an IP literal host as itself, without a lookup', async () => {
    const lookup = () => Promise.reject(new Error('no lookup expected'));
    await expect(checkTargetUrl('https://10.0.0.1/x', { allowPrivate: false, lookup })).rejects.toThrow(
      /resolves to a private address: refused/,
    );
    await expect(checkTargetUrl('https://[::1]:8443/x', { allowPrivate: false, lookup })).rejects.toThrow(
      /resolves to a loopback address: refused/,
    );
    await expect(checkTargetUrl('https://93.184.216.34/x', { allowPrivate: false, lookup })).resolves.toEqual([
      { address: '93.184.216.34', family: 4 },
    ]);
    await expect(checkTargetUrl('https://[2606:2800:220:1::]/x', { allowPrivate: false, lookup })).resolves.toEqual([
      { address: '2606:2800:220:1::', family: 6 },
    ]);
  });

  it('lets every address through when private targets are allowed', async () => {
    const all = ['10.0.0.1', '127.0.0.1', '::1', 'fe80::1', '169.254.169.254', '93.184.216.34'];
    await expect(checkTargetUrl('https://hooks.example.com/x', { allowPrivate: true, lookup: resolvingTo(...all) })).resolves.toHaveLength(
      all.length,
    );
  });

  it('refuses a name that resolves to nothing', async () => {
    const err = await checkTargetUrl('https://hooks.example.com/x', { allowPrivate: true, lookup: resolvingTo() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookTargetRefusedError);
    expect((err as Error).message).toBe("webhook_url's host hooks.example.com does not resolve.");
  });

  it('refuses a name that does not resolve (a real lookup), even when private targets are allowed', async () => {
    for (const allowPrivate of [false, true]) {
      const err = await checkTargetUrl('https://nonexistent.invalid/x', { allowPrivate }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WebhookTargetRefusedError);
      expect((err as Error).message).toBe("webhook_url's host nonexistent.invalid does not resolve.");
      // NXDOMAIN where a DNS server answers; on a machine with none (a network namespace of its own),
      // the resolver's refused or timed-out query.
      expect((err as Error).cause).toMatchObject({ code: expect.stringMatching(/^(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEOUT)$/) });
    }
  });
});

describe('IPv6 addresses that carry an IPv4 address are judged by it', () => {
  const embedded = ' (an IPv4 address inside an IPv6 one)';
  it.each([
    // IPv4-mapped ::ffff:a.b.c.d
    ['::ffff:127.0.0.1', `a loopback address${embedded}`],
    ['::ffff:7f00:1', `a loopback address${embedded}`],
    ['::ffff:169.254.169.254', `a link-local address${embedded}`],
    // IPv4-translated ::ffff:0:a.b.c.d
    ['::ffff:0:a00:1', `a private address${embedded}`],
    // IPv4-compatible ::a.b.c.d (::7f00:1 is 127.0.0.1; ipaddr.js alone calls it unicast)
    ['::7f00:1', `a loopback address${embedded}`],
    ['::a00:1', `a private address${embedded}`],
    ['::c0a8:101', `a private address${embedded}`],
    // NAT64's well-known prefix 64:ff9b::/96
    ['64:ff9b::7f00:1', `a loopback address${embedded}`],
    ['64:ff9b::10.0.0.1', `a private address${embedded}`],
    ['64:ff9b::a9fe:a9fe', `a link-local address${embedded}`],
    // 6to4 2002:AABB:CCDD::/48
    ['2002:7f00:1::1', `a loopback address${embedded}`],
    ['2002:a00:1::', `a private address${embedded}`],
    ['2002:a9fe:a9fe::1', `a link-local address${embedded}`],
  ])('refuses %s: %s', async (address, words) => {
    const lookup = async (): Promise<ResolvedAddress[]> => [{ address, family: 6 }];
    const err = await checkTargetUrl('https://hooks.example.com/x', { allowPrivate: false, lookup }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookTargetRefusedError);
    expect((err as Error).message).toBe(`webhook_url resolves to ${words}: refused.`);
    // Written as the URL's host, without a lookup, the same.
    await expect(checkTargetUrl(`https://[${address}]/x`, { allowPrivate: false })).rejects.toThrow(words);
  });

  it.each(['::ffff:93.184.216.34', '::5db8:d822', '64:ff9b::93.184.216.34', '2002:5db8:d822::1'])(
    'accepts %s, which carries a public IPv4 address',
    async (address) => {
      const lookup = async (): Promise<ResolvedAddress[]> => [{ address, family: 6 }];
      await expect(checkTargetUrl('https://hooks.example.com/x', { allowPrivate: false, lookup })).resolves.toHaveLength(1);
    },
  );

  it('keeps ::1 and :: as IPv6 loopback and unspecified, and other IPv6 ranges by their own class', () => {
    expect(nonPublic('::1')).toEqual({ words: 'a loopback', embedded: false });
    expect(nonPublic('::')).toEqual({ words: 'an unspecified', embedded: false });
    expect(nonPublic('2001::1')?.words).toMatch(/teredo/);
    expect(nonPublic('2606:2800:220:1::')).toBeUndefined();
  });

  it('reads the IPv4 address of each form', () => {
    const v4 = (a: string) => embeddedIPv4(ipaddr.IPv6.parse(a))?.toString();
    expect(v4('::ffff:1.2.3.4')).toBe('1.2.3.4');
    expect(v4('::ffff:0:102:304')).toBe('1.2.3.4');
    expect(v4('::102:304')).toBe('1.2.3.4');
    expect(v4('64:ff9b::102:304')).toBe('1.2.3.4');
    expect(v4('2002:102:304:5::6')).toBe('1.2.3.4');
    expect(v4('::1')).toBeUndefined();
    expect(v4('2606:2800:220:1::')).toBeUndefined();
  });
});

describe('the lookup at creation', () => {
  it('gives up after its timeout with "does not resolve in time", naming no address', async () => {
    const never = () => new Promise<ResolvedAddress[]>(() => undefined);
    const started = Date.now();
    const err = await checkTargetUrl('https://slow.example.com/x', { allowPrivate: false, lookup: never, lookupTimeoutMs: 100 }).catch(
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(err).toBeInstanceOf(WebhookTargetRefusedError);
    expect((err as Error).message).toBe("webhook_url's host slow.example.com does not resolve in time (within 100 ms).");
  });

  it('waits 5 s by default', () => {
    expect(ENDPOINT_LOOKUP_TIMEOUT_MS).toBe(5_000);
  });
});
