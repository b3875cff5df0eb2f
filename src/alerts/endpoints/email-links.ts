/**
 * The links e-mails carry: confirm an address, unsubscribe it. A link names the address's record
 * and carries its purpose, when it was issued and until when it works, signed with HMAC-SHA256
 * under a key derived from APP_KEY for this purpose alone (no other MAC or seal uses it), so a
 * link can be neither made up nor turned from one purpose or record into another. Nothing is
 * stored per link: the record's own state decides what a valid link may still do.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { purposeKey } from '../../../config/app-key.js';
import { OBJECT_ID_RE } from '../../db/mongo.js';

export type LinkPurpose = 'confirm' | 'unsubscribe';

const PURPOSE_CODE: Readonly<Record<LinkPurpose, string>> = { confirm: 'c', unsubscribe: 'u' };
const CODE_PURPOSE: Readonly<Record<string, LinkPurpose>> = { c: 'confirm', u: 'unsubscribe' };

/** The path under APP_URL of each purpose's page. */
export const LINK_PATHS: Readonly<Record<LinkPurpose, string>> = { confirm: '/email/confirm', unsubscribe: '/email/unsubscribe' };

/**
 * How long an unsubscribe link works: long, since a mail may be read months later, and all it can
 * do is stop mail to the address it was sent to.
 */
export const UNSUBSCRIBE_TTL_MS = 365 * 86_400_000;

export interface LinkClaims {
  readonly purpose: LinkPurpose;
  /** The email_addresses record's id. */
  readonly recordId: string;
  readonly issuedAt: number;
  readonly expiresAt: number;
}

export type LinkCheck = { ok: true; claims: LinkClaims } | { ok: false; why: 'invalid' | 'expired' };

function mac(appKey: Buffer, body: string): Buffer {
  return createHmac('sha256', purposeKey(appKey, 'e-mail link key')).update(body).digest();
}

/** `<purpose>.<record id>.<issued, ms base 36>.<expires>.<mac, base64url>`: URL-safe as it is. */
export function signLink(appKey: Buffer, claims: LinkClaims): string {
  const body = [PURPOSE_CODE[claims.purpose], claims.recordId, claims.issuedAt.toString(36), claims.expiresAt.toString(36)].join('.');
  return `${body}.${mac(appKey, body).toString('base64url')}`;
}

/** The token's claims when it is well formed, its MAC verifies and it has not expired at `now`. */
export function verifyLink(appKey: Buffer, token: string, now: number): LinkCheck {
  const parts = token.split('.');
  if (parts.length !== 5 || token.length > 200) return { ok: false, why: 'invalid' };
  const [code, recordId, issued, expires, tag] = parts as [string, string, string, string, string];
  const purpose = CODE_PURPOSE[code];
  if (!purpose || !OBJECT_ID_RE.test(recordId) || !/^[0-9a-z]{1,11}$/.test(issued) || !/^[0-9a-z]{1,11}$/.test(expires)) {
    return { ok: false, why: 'invalid' };
  }
  const want = mac(appKey, parts.slice(0, 4).join('.'));
  const got = Buffer.from(tag, 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want) || got.toString('base64url') !== tag) return { ok: false, why: 'invalid' };
  const claims = { purpose, recordId, issuedAt: parseInt(issued, 36), expiresAt: parseInt(expires, 36) };
  return claims.expiresAt <= now ? { ok: false, why: 'expired' } : { ok: true, claims };
}

/** The absolute URL of a link: APP_URL, the purpose's path, the token. */
export function linkUrl(appUrl: string, purpose: LinkPurpose, token: string): string {
  return `${appUrl}${LINK_PATHS[purpose]}/${token}`;
}
