import { hkdfSync, randomBytes } from 'node:crypto';

/** The Laravel-style key format operators already know: `base64:` + 32 bytes. */
export function parseAppKey(value: string): Buffer | undefined {
  const m = /^base64:([A-Za-z0-9+/]{43}=)$/.exec(value.trim());
  if (!m?.[1]) return undefined;
  const key = Buffer.from(m[1], 'base64');
  return key.length === 32 ? key : undefined;
}

export function generateAppKey(): string {
  return `base64:${randomBytes(32).toString('base64')}`;
}

const derived = new WeakMap<Buffer, Map<string, Buffer>>();

/**
 * A 32-byte key of its own for one purpose ('webhook-secret', 'chat-url', 'api-token', …), derived
 * from APP_KEY with HKDF-SHA256, so that no two uses ever share a key: what one seals or signs,
 * another cannot open or forge. The info is `shelfwatch <purpose>`; changing a purpose's name
 * changes its key, so a name once in use stays.
 */
export function purposeKey(appKey: Buffer, purpose: string): Buffer {
  let keys = derived.get(appKey);
  if (!keys) derived.set(appKey, (keys = new Map()));
  let key = keys.get(purpose);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', appKey, Buffer.alloc(0), `shelfwatch ${purpose}`, 32));
    keys.set(purpose, key);
  }
  return key;
}
