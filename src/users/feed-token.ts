import { createHmac, randomBytes } from 'node:crypto';
import type { Types } from 'mongoose';
import { hashToken } from './token.js';

/**
 * An account's feed token: what a feed reader sends in the deals feed's URL (it cannot send a
 * header). It is not the API token and grants nothing else. Derived from the app key and a random
 * nonce stored on the account, so it can be shown again without a stored copy, and a rotation (a
 * new nonce) ends the old one; it is looked up by its SHA-256 hash, like the API token.
 */

/** Characters of a feed token: 43 of base64url, 256 bits. */
export const FEED_TOKEN_LENGTH = 43;

export function newFeedNonce(): string {
  return randomBytes(16).toString('base64url');
}

export function feedTokenOf(appKey: Buffer, userId: Types.ObjectId, nonce: string): string {
  return createHmac('sha256', appKey).update(`deals-feed\0${userId.toHexString()}\0${nonce}`).digest('base64url');
}

export function hashFeedToken(token: string): string {
  return hashToken(token);
}
