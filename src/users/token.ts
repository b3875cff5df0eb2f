import { createCipheriv, createDecipheriv, createHash, randomBytes, randomInt } from 'node:crypto';
import { TokenDecryptError } from '../errors/index.js';

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

/** AES-256-GCM under APP_KEY, as `v1.<iv>.<tag>.<ciphertext>` in base64url, so the owner can read it again. */
export function encryptToken(token: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

export function decryptToken(sealed: string, key: Buffer): string {
  const [version, iv, tag, data] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || data === undefined) throw new TokenDecryptError('unknown token cipher format');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new TokenDecryptError('the stored token cannot be decrypted with this APP_KEY (was APP_KEY changed?)');
  }
}
