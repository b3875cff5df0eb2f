/**
 * Where the host names accounts give (webhook and chat URLs) resolve. Through c-ares
 * (dns.promises.Resolver), not dns.lookup: getaddrinfo holds one of libuv's four threads until the
 * system resolver gives up, which no timeout of ours can end, so a few names whose DNS server never
 * answers would stall every file and crypto call of the process. A Resolver's query has its own
 * timeout and tries, and is cancelled at ENDPOINT_LOOKUP_TIMEOUT_MS in any case.
 *
 * c-ares does not read /etc/hosts: `localhost` and the names under it are loopback by definition
 * (RFC 6761 §6.3) and answered here without DNS; every other name must be in DNS.
 */
import { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import type { Types } from 'mongoose';
import { DNS_LOOKUPS_PER_ACCOUNT, DNS_TRIES, DNS_TRY_TIMEOUT_MS, ENDPOINT_LOOKUP_TIMEOUT_MS } from '../../../config/alerts.js';
import { TooManyRequestsError } from '../../core/errors.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface ResolveOptions {
  /** The first try's timeout (c-ares lengthens the later ones). */
  readonly tryTimeoutMs: number;
  readonly tries: number;
  /** When the lookup is cancelled, whatever the tries. */
  readonly deadlineMs: number;
  /** Tests: the DNS servers asked (`host:port`); the system's (resolv.conf) otherwise. */
  readonly servers?: readonly string[];
}

export const DEFAULT_RESOLVE: ResolveOptions = {
  tryTimeoutMs: DNS_TRY_TIMEOUT_MS,
  tries: DNS_TRIES,
  deadlineMs: ENDPOINT_LOOKUP_TIMEOUT_MS,
};

const LOOPBACK: readonly ResolvedAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/** `localhost`, `LOCALHOST.`, `api.localhost`: loopback without asking anyone. */
export function isLocalhostName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/** A name DNS need not be asked about: an address literal, or a localhost name. */
function answeredHere(host: string): ResolvedAddress[] | null {
  const family = isIP(host);
  if (family !== 0) return [{ address: host, family }];
  return isLocalhostName(host) ? LOOPBACK.map((a) => ({ ...a })) : null;
}

/**
 * Every A and AAAA address of `host` (its IPv4 ones first). Rejects with the resolver's error
 * (`ENOTFOUND`, `ETIMEOUT`, `ECANCELLED` at the deadline, …) when neither query found an address.
 * One Resolver per lookup, so cancelling it at the deadline ends only this lookup's queries.
 */
export async function resolveHost(host: string, opts: ResolveOptions = DEFAULT_RESOLVE): Promise<ResolvedAddress[]> {
  const here = answeredHere(host);
  if (here) return here;
  const resolver = new dns.Resolver({ timeout: opts.tryTimeoutMs, tries: opts.tries });
  if (opts.servers) resolver.setServers([...opts.servers]);
  const timer = setTimeout(() => resolver.cancel(), opts.deadlineMs);
  try {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const found = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (found.length > 0) return found;
    throw v4.status === 'rejected' ? v4.reason : v6.status === 'rejected' ? v6.reason : new Error(`no address for ${host}`);
  } finally {
    clearTimeout(timer);
  }
}

/** 429: the account has DNS_LOOKUPS_PER_ACCOUNT lookups under way, and none ended within the deadline. */
export class HostLookupsBusyError extends TooManyRequestsError {
  override readonly name = 'HostLookupsBusyError';
  constructor(perAccount: number) {
    super(`At most ${perAccount} host name lookups of one account run at once, and they are taking long; try again shortly.`, 5);
  }
}

interface Slots {
  busy: number;
  readonly waiting: (() => void)[];
}

/**
 * The process's lookups of account-named hosts, at most `perAccount` of one account at once; more
 * wait their turn, in order, until the deadline, and are then refused (HostLookupsBusyError: a 429
 * at creation, a failed attempt at delivery). Literals and localhost names take no place.
 */
export class HostLookups {
  private readonly slots = new Map<string, Slots>();

  constructor(
    private readonly opts: ResolveOptions & { readonly perAccount: number } = { ...DEFAULT_RESOLVE, perAccount: DNS_LOOKUPS_PER_ACCOUNT },
  ) {}

  /** A resolver whose lookups count against `account`. */
  forAccount(account: Types.ObjectId | string): HostResolver {
    const key = String(account);
    return (host) => this.lookup(key, host);
  }

  /** Lookups of the account under way now (tests, metrics). */
  busy(account: Types.ObjectId | string): number {
    return this.slots.get(String(account))?.busy ?? 0;
  }

  private async lookup(account: string, host: string): Promise<ResolvedAddress[]> {
    if (answeredHere(host)) return resolveHost(host, this.opts);
    await this.acquire(account);
    try {
      return await resolveHost(host, this.opts);
    } finally {
      this.release(account);
    }
  }

  private acquire(account: string): Promise<void> {
    let s = this.slots.get(account);
    if (!s) this.slots.set(account, (s = { busy: 0, waiting: [] }));
    if (s.busy < this.opts.perAccount) {
      s.busy++;
      return Promise.resolve();
    }
    const slots = s;
    return new Promise<void>((resolve, reject) => {
      const turn = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const i = slots.waiting.indexOf(turn);
        if (i >= 0) slots.waiting.splice(i, 1);
        reject(new HostLookupsBusyError(this.opts.perAccount));
      }, this.opts.deadlineMs);
      slots.waiting.push(turn);
    });
  }

  /** Hands the place to the next waiter, or frees it. */
  private release(account: string): void {
    const s = this.slots.get(account);
    if (!s) return;
    const next = s.waiting.shift();
    if (next) return next();
    s.busy--;
    if (s.busy === 0) this.slots.delete(account);
  }
}
