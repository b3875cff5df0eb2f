/**
 * Deterministic randomness: every property of the synthetic catalogue is a hash of the seed and
 * what it describes, so nothing is stored and the same seed always gives the same catalogue.
 */
import { createHash } from 'node:crypto';

export type Part = string | number | bigint;

export function digest(...parts: readonly Part[]): Buffer {
  return createHash('sha256').update(parts.map(String).join('\u001f')).digest();
}

/** A number in [0, 1). */
export function unit(...parts: readonly Part[]): number {
  return digest(...parts).readUInt32BE(0) / 2 ** 32;
}

/** A whole number in [min, max]. */
export function between(min: number, max: number, ...parts: readonly Part[]): number {
  return min + Math.floor(unit(...parts) * (max - min + 1));
}

export function pick<T>(list: readonly T[], ...parts: readonly Part[]): T {
  return list[Math.floor(unit(...parts) * list.length)]!;
}

/** A non-negative BigInt below `modulus`. */
export function bigBelow(modulus: bigint, ...parts: readonly Part[]): bigint {
  return (
    BigInt(
      `0x${digest(...parts)
        .subarray(0, 16)
        .toString('hex')}`,
    ) % modulus
  );
}
