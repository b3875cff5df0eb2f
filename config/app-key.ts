import { randomBytes } from 'node:crypto';

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
