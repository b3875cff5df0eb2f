/**
 * Every field that holds a sealed secret (src/secrets/seal.ts), with its collection and purpose:
 * the code that seals and opens them and the start-up upgrade that seals old values anew
 * (src/secrets/reseal.ts) read them here, so a new sealed field is one more line.
 */
import type { Types } from 'mongoose';
import { openSealed, seal, tryOpenSealed, type SealPurpose, type SealedPlace } from './seal.js';

export interface SealedField {
  readonly collection: string;
  readonly field: string;
  readonly purpose: SealPurpose;
  /** An array of sealed values, each bound to the same place. */
  readonly many: boolean;
}

export const SEALED_FIELDS = {
  /** An account's API token, for showing it again (look-ups go by its hash). */
  userToken: { collection: 'users', field: 'token_cipher', purpose: 'api-token', many: false },
  /** A webhook endpoint's signing secret. */
  endpointSecret: { collection: 'webhook_endpoints', field: 'secret_sealed', purpose: 'webhook-secret', many: false },
  /** Secrets of alerts of before endpoints that the endpoint still signs with. */
  endpointLegacySecrets: { collection: 'webhook_endpoints', field: 'legacy_secrets_sealed', purpose: 'webhook-secret', many: true },
  /** A chat endpoint's webhook URL. */
  endpointTarget: { collection: 'webhook_endpoints', field: 'target_sealed', purpose: 'chat-url', many: false },
  /** The secret of an alert of before endpoints, until it moves to its endpoint. */
  alertSecret: { collection: 'alerts', field: 'secret_sealed', purpose: 'webhook-secret', many: false },
} as const satisfies Record<string, SealedField>;

export function placeOf(f: SealedField, id: Types.ObjectId): SealedPlace {
  return { collection: f.collection, id, field: f.field };
}

/** `plain` sealed for `f` on the record `id`. */
export function sealFor(appKey: Buffer, f: SealedField, id: Types.ObjectId, plain: string): string {
  return seal(appKey, f.purpose, placeOf(f, id), plain);
}

/** The secret of `f` on the record `id`; SealedSecretError when `sealed` was not sealed there. */
export function openFor(appKey: Buffer, f: SealedField, id: Types.ObjectId, sealed: string): string {
  return openSealed(appKey, f.purpose, placeOf(f, id), sealed);
}

/** openFor, or null when it does not open. */
export function tryOpenFor(appKey: Buffer, f: SealedField, id: Types.ObjectId, sealed: string): string | null {
  return tryOpenSealed(appKey, f.purpose, placeOf(f, id), sealed);
}
