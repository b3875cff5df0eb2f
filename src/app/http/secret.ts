import { createHash, timingSafeEqual } from 'node:crypto';

/** Compares digests, so neither the length nor the content of a guess leaks through timing. */
export function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(expected).digest());
}
