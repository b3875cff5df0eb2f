/**
 * Checks a TRUST_PROXY address list the way Express (proxy-addr) will read it: comma-separated
 * addresses, `address/prefix` or `address/netmask` subnets, and the names `loopback`, `linklocal`,
 * `uniquelocal`. Express trusts each X-Forwarded-For hop whose sender is in the list, so a list that
 * holds every address lets any client name its own address, exactly as `true` would. That is
 * checked on the union of the entries: `0.0.0.0/1, 128.0.0.0/1` trusts everyone as surely as
 * `0.0.0.0/0`, and so does `::ffff:0.0.0.0/96`, which proxy-addr applies to every IPv4 client.
 */
import { isIPv4, isIPv6 } from 'node:net';

const NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const IPV4_BITS = 32n;
const IPV6_BITS = 128n;
/** ::ffff:0:0/96, the IPv4-mapped block: proxy-addr reads it as IPv4 and never as an IPv6 client. */
const MAPPED_FIRST = 0xffffn << 32n;
const MAPPED_LAST = MAPPED_FIRST | 0xffffffffn;

interface Range {
  readonly family: 4 | 6;
  readonly first: bigint;
  readonly last: bigint;
}

function ipv4Value(text: string): bigint {
  return text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function ipv6Value(text: string): bigint {
  let s = text.replace(/%.*$/, '');
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s)?.[1];
  if (v4 !== undefined) {
    const n = ipv4Value(v4);
    s = `${s.slice(0, -v4.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = s.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/** The prefix length of a contiguous IPv4 netmask such as 255.255.0.0, or undefined. */
function maskLength(mask: string): number | undefined {
  const bits = ipv4Value(mask).toString(2).padStart(32, '0');
  if (!/^1*0*$/.test(bits)) return undefined;
  const zero = bits.indexOf('0');
  return zero === -1 ? 32 : zero;
}

function block(family: 4 | 6, value: bigint, prefix: number): Range {
  const hostBits = (family === 4 ? IPV4_BITS : IPV6_BITS) - BigInt(prefix);
  const first = (value >> hostBits) << hostBits;
  return { family, first, last: first | ((1n << hostBits) - 1n) };
}

/** What an entry trusts, or a problem; a mapped IPv6 subnet narrower than /96 matches no client at all. */
function rangeOf(entry: string): Range | null | 'every' | 'invalid' {
  const slash = entry.lastIndexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const suffix = slash === -1 ? undefined : entry.slice(slash + 1);
  const family = isIPv4(address) ? 4 : isIPv6(address) ? 6 : undefined;
  const max = family === 6 ? 128 : 32;
  let prefix: number | undefined = max;
  if (suffix !== undefined) {
    if (/^\d+$/.test(suffix)) prefix = Number(suffix);
    else prefix = family === 4 && isIPv4(suffix) ? maskLength(suffix) : undefined;
  }
  // Before the address is checked: `0/0` and `x/0` say "everyone" whatever the address.
  if (prefix === 0) return 'every';
  if (family === undefined || prefix === undefined || prefix > max) return 'invalid';
  if (family === 4) return block(4, ipv4Value(address), prefix);
  const value = ipv6Value(address);
  const mapped = value >= MAPPED_FIRST && value <= MAPPED_LAST;
  if (!mapped) return block(6, value, prefix);
  if (prefix < 96) return null;
  if (prefix === 96) return 'every';
  return block(4, value & 0xffffffffn, prefix - 96);
}

function coversAll(ranges: readonly Range[], bits: bigint): boolean {
  const sorted = [...ranges].sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  let next = 0n;
  for (const r of sorted) {
    if (r.first > next) return false;
    if (r.last + 1n > next) next = r.last + 1n;
  }
  return next >= 1n << bits;
}

const FORGE = 'so any client could forge its address';

/** Why a TRUST_PROXY value is refused (a predicate for the variable's name), or undefined. Hop counts, `false` and `true` are for the caller. */
export function trustProxyListProblem(value: string): string | undefined {
  if (/^\d+$/.test(value) || value === 'false' || value === 'true') return undefined;
  const ranges: Range[] = [];
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (NAMES.has(entry)) continue;
    const range = rangeOf(entry);
    if (range === 'every') return `must list the proxies' own addresses: ${JSON.stringify(entry)} trusts every address, ${FORGE}`;
    if (range === 'invalid') {
      return `must be a number of proxies or a comma list of addresses, subnets (10.0.0.0/8) and loopback, linklocal, uniquelocal (${JSON.stringify(entry)} is none of them)`;
    }
    if (range) ranges.push(range);
  }
  const v4 = ranges.filter((r) => r.family === 4);
  const v6 = [...ranges.filter((r) => r.family === 6), { family: 6 as const, first: MAPPED_FIRST, last: MAPPED_LAST }];
  if (coversAll(v4, IPV4_BITS) || coversAll(v6, IPV6_BITS)) {
    return `must list the proxies' own addresses: together these subnets trust every address of IPv${coversAll(v4, IPV4_BITS) ? 4 : 6}, ${FORGE}`;
  }
  return undefined;
}
