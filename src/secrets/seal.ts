/**
 * Secrets the server must read again (an API token's copy shown to its owner, a webhook's signing
 * secret, a chat service's webhook URL) are stored sealed: AES-256-GCM with a 16-byte tag, under a
 * key of their purpose derived from APP_KEY (config/app-key.ts), with the record's collection, id
 * and field as associated data. A sealed value copied to another record or field, by anyone who can
 * write the database, does not open there.
 *
 * `v2.<iv>.<tag>.<ciphertext>` (base64url). `v1.` values, sealed under APP_KEY itself and bound to
 * nothing, still open, so records of before keep working until the start-up upgrade
 * (src/secrets/reseal.ts) has sealed them again as v2.
 */
import { createCipheriv, createDecipheriv, randomBytes, type CipherGCMTypes } from 'node:crypto';
import type { Types } from 'mongoose';
import { purposeKey } from '../../config/app-key.js';
import { SealedSecretError } from '../core/errors.js';

export type SealPurpose = 'api-token' | 'webhook-secret' | 'chat-url';

/** Where a sealed value lives: it opens there and nowhere else. */
export interface SealedPlace {
  readonly collection: string;
  readonly id: Types.ObjectId | string;
  readonly field: string;
}

const CIPHER: CipherGCMTypes = 'aes-256-gcm';
const TAG_BYTES = 16;
const IV_BYTES = 12;
const CURRENT = 'v2';
const LEGACY = 'v1';

function associatedData(place: SealedPlace): Buffer {
  const id = typeof place.id === 'string' ? place.id : place.id.toHexString();
  return Buffer.from(`${place.collection}:${id}:${place.field}`, 'utf8');
}

export function seal(appKey: Buffer, purpose: SealPurpose, place: SealedPlace, plain: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, purposeKey(appKey, purpose), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(associatedData(place));
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [CURRENT, iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

/** Whether a stored value is sealed the current way (the upgrade leaves those alone). */
export function isCurrentSeal(sealed: string): boolean {
  return sealed.startsWith(`${CURRENT}.`);
}

/** What the upgrade looks for: the prefix of values sealed the old way. */
export const LEGACY_SEAL_PREFIX = `${LEGACY}.`;

/**
 * The secret `sealed` holds, if it was sealed for this purpose at this place (or is a v1 value,
 * which was bound to nothing). Throws SealedSecretError otherwise; a tag of any length but 16 bytes
 * is refused, as GCM would otherwise check a truncated one.
 */
export function openSealed(appKey: Buffer, purpose: SealPurpose, place: SealedPlace, sealed: string): string {
  const [version, iv, tag, data, extra] = sealed.split('.');
  const current = version === CURRENT;
  if ((!current && version !== LEGACY) || !iv || !tag || data === undefined || extra !== undefined) {
    throw new SealedSecretError(`the ${place.field} of ${place.collection} ${String(place.id)} is not a sealed value`);
  }
  try {
    const key = current ? purposeKey(appKey, purpose) : appKey;
    const decipher = createDecipheriv(CIPHER, key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
    if (current) decipher.setAAD(associatedData(place));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new SealedSecretError(
      `the ${place.field} of ${place.collection} ${String(place.id)} does not open: moved from another record or field, altered, or sealed under another APP_KEY`,
    );
  }
}

/** openSealed, or null when it does not open. */
export function tryOpenSealed(appKey: Buffer, purpose: SealPurpose, place: SealedPlace, sealed: string): string | null {
  try {
    return openSealed(appKey, purpose, place, sealed);
  } catch (err) {
    if (err instanceof SealedSecretError) return null;
    throw err;
  }
}
