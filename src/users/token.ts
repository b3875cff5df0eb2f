import { createHash, randomInt } from 'node:crypto';
import type { Types } from 'mongoose';
import { openFor, sealFor, SEALED_FIELDS } from '../secrets/fields.js';

/** The contract's limit: a token has at most 60 characters. We always issue exactly 60. */
export const TOKEN_LENGTH = 60;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 60 characters from 62 symbols: about 357 bits, drawn without modulo bias. */
export function generateToken(): string {
  let out = '';
  for (let i = 0; i < TOKEN_LENGTH; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return out;
}

/** The look-up key. Tokens are high-entropy, so a plain SHA-256 (no salt, no KDF) is the right tool. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The copy of the token its owner can be shown again, sealed to the account's record: it opens on no other. */
export function sealToken(token: string, userId: Types.ObjectId, appKey: Buffer): string {
  return sealFor(appKey, SEALED_FIELDS.userToken, userId, token);
}

/** The token of an account's sealed copy; SealedSecretError when it does not open there. */
export function openToken(sealed: string, userId: Types.ObjectId, appKey: Buffer): string {
  return openFor(appKey, SEALED_FIELDS.userToken, userId, sealed);
}
