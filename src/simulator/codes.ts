/**
 * A bijection between (EAN, slot) and ASINs, so that "which ASINs list this EAN" and "which EAN does
 * this ASIN list" agree without storing anything. An ASIN `B` + 9 base-36 characters encodes
 * v = ean12 × 100 + slot through a keyed affine permutation of [0, 36^9): ASINs of one EAN look
 * unrelated, and each seed (and marketplace, as ASINs are per marketplace) has its own mapping.
 */
import { isValidEan13 } from '../core/identifiers.js';
import { bigBelow, unit } from './hash.js';

const SPACE = 36n ** 9n;
const SLOTS = 100n;
const EAN12_SPACE = 10n ** 12n;

function mod(a: bigint, m: bigint): bigint {
  return ((a % m) + m) % m;
}

function inverse(a: bigint, m: bigint): bigint {
  let [r0, r1, s0, s1] = [a, m, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1] = [r1, r0 - q * r1];
    [s0, s1] = [s1, s0 - q * s1];
  }
  return mod(s0, m);
}

export function eanCheckDigit(first12: string): string {
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(first12[i]) * (i % 2 === 0 ? 1 : 3);
  return String((10 - (sum % 10)) % 10);
}

export class CodeMap {
  readonly #a: bigint;
  readonly #aInv: bigint;
  readonly #b: bigint;

  constructor(
    private readonly seed: string,
    private readonly market: string,
  ) {
    // SPACE = 2^18 · 3^18: a multiplier ≡ 1 (mod 6) is coprime with it, so the map is a bijection.
    const raw = bigBelow(SPACE, seed, market, 'asin-map-a');
    this.#a = raw - (raw % 6n) + 1n;
    this.#aInv = inverse(this.#a, SPACE);
    this.#b = bigBelow(SPACE, seed, market, 'asin-map-b');
  }

  /**
   * How many ASINs list this EAN: most codes one, some none, a few several (one code can map to many
   * ASINs), and one in five hundred more than a search page holds, so that resolving a code page by
   * page is exercised.
   */
  asinCount(ean: string): number {
    const u = unit(this.seed, this.market, 'ean-count', ean);
    if (u < 0.1) return 0;
    if (u < 0.88) return 1;
    if (u < 0.96) return 2;
    if (u < 0.99) return 3;
    if (u < 0.998) return 5;
    return 23;
  }

  asinsOf(ean: string): string[] {
    if (!isValidEan13(ean)) return [];
    const e12 = BigInt(ean.slice(0, 12));
    return Array.from({ length: this.asinCount(ean) }, (_, slot) => this.#encode(e12 * SLOTS + BigInt(slot)));
  }

  /** The EAN this ASIN lists, if it is one of that EAN's ASINs. */
  eanOf(asin: string): string | undefined {
    if (!/^B[0-9A-Z]{9}$/.test(asin)) return undefined;
    const v = mod(this.#aInv * (BigInt(parseInt36(asin.slice(1))) - this.#b), SPACE);
    const e12 = v / SLOTS;
    if (e12 >= EAN12_SPACE) return undefined;
    const first12 = e12.toString().padStart(12, '0');
    const ean = first12 + eanCheckDigit(first12);
    return Number(v % SLOTS) < this.asinCount(ean) ? ean : undefined;
  }

  #encode(v: bigint): string {
    return `B${mod(this.#a * v + this.#b, SPACE)
      .toString(36)
      .toUpperCase()
      .padStart(9, '0')}`;
  }
}

function parseInt36(s: string): bigint {
  let v = 0n;
  for (const ch of s.toLowerCase()) v = v * 36n + BigInt(parseInt(ch, 36));
  return v;
}
