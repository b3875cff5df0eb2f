/**
 * Which addresses a webhook may go to, as one rule for the check at creation
 * (target-url.ts) and the one at connection time (deliveries/send-webhook.ts). Only public unicast
 * passes. An IPv6 address that carries an IPv4 address is judged by the IPv4 address: a packet
 * to it reaches that IPv4 host (through the kernel, a NAT64 gateway or a 6to4 relay), so
 * `::ffff:127.0.0.1`, `::7f00:1` and `64:ff9b::a00:1` are loopback, loopback and private.
 */
import ipaddr from 'ipaddr.js';

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

const RANGE_WORDS: Readonly<Record<string, string>> = {
  private: 'a private',
  loopback: 'a loopback',
  linkLocal: 'a link-local',
  uniqueLocal: 'a unique-local',
  carrierGradeNat: 'a carrier-grade NAT',
  multicast: 'a multicast',
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  reserved: 'a reserved',
};

const v4 = (p: readonly number[], at: number): IPv4 => new ipaddr.IPv4([p[at]! >> 8, p[at]! & 0xff, p[at + 1]! >> 8, p[at + 1]! & 0xff]);

/**
 * The IPv4 address an IPv6 address carries, by the forms that carry one:
 * - IPv4-mapped `::ffff:a.b.c.d` (RFC 4291) and IPv4-translated `::ffff:0:a.b.c.d` (RFC 2765);
 * - IPv4-compatible `::a.b.c.d` (RFC 4291, deprecated; `::7f00:1` is 127.0.0.1), but `::` and `::1`,
 *   which are IPv6's own unspecified and loopback addresses;
 * - NAT64's well-known prefix `64:ff9b::/96` (RFC 6052);
 * - 6to4 `2002:AABB:CCDD::/48` (RFC 3056), the IPv4 address in the second and third groups.
 * undefined for any other address.
 */
export function embeddedIPv4(addr: IPv6): IPv4 | undefined {
  const p = addr.parts;
  const zeros = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && p[5] === 0xffff) return v4(p, 6);
  if (zeros(0, 4) && p[4] === 0xffff && p[5] === 0) return v4(p, 6);
  if (zeros(0, 6) && !(p[6] === 0 && p[7]! <= 1)) return v4(p, 6);
  if (p[0] === 0x64 && p[1] === 0xff9b && zeros(2, 6)) return v4(p, 6);
  if (p[0] === 0x2002) return v4(p, 1);
  return undefined;
}

export interface AddressClass {
  /** How the refusal names the class: `a private`, `a loopback`, … (with "address" after it). */
  readonly words: string;
  /** The address is an IPv6 form carrying the IPv4 address that was judged. */
  readonly embedded: boolean;
}

function classOf(addr: IPv4 | IPv6): string | undefined {
  const range = addr.range();
  return range === 'unicast' ? undefined : (RANGE_WORDS[range] ?? `a non-public (${range})`);
}

/** Why `address` is not one we call, or undefined when it is public unicast. */
export function nonPublic(address: string): AddressClass | undefined {
  let parsed: IPv4 | IPv6;
  try {
    parsed = ipaddr.parse(address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address);
  } catch {
    return { words: 'an unreadable', embedded: false };
  }
  if (parsed.kind() === 'ipv6') {
    const inner = embeddedIPv4(parsed as IPv6);
    if (inner) {
      const words = classOf(inner);
      return words ? { words, embedded: true } : undefined;
    }
  }
  const words = classOf(parsed);
  return words ? { words, embedded: false } : undefined;
}

/** "a loopback address" or "a loopback address (an IPv4 address inside IPv6)": never the address itself. */
export function describeClass(c: AddressClass): string {
  return `${c.words} address${c.embedded ? ' (an IPv4 address inside an IPv6 one)' : ''}`;
}
