import { createCipheriv, randomBytes } from 'node:crypto';

/**
 * A secret sealed the way releases before bound secrets to their records did: AES-256-GCM under
 * APP_KEY itself, no associated data, `v1.<iv>.<tag>.<ciphertext>`. Tests of the upgrade store these.
 */
export function sealV1(plain: string, appKey: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', appKey, iv);
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}
