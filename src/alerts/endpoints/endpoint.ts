import { randomBytes } from 'node:crypto';
import type { Types } from 'mongoose';
import type { EndpointFields } from '../../models/endpoint.js';
import type { AlertChannel } from '../../models/alert.js';
import { SEALED_FIELDS, tryOpenFor } from '../../secrets/fields.js';

/**
 * An endpoint as the service reads it, and what is derived from its record alone: its state,
 * channel, shown target and sealed parts.
 */

export type Endpoint = Omit<EndpointFields, 'secret_sealed' | 'legacy_secrets_sealed' | 'target_sealed'>;
export type EndpointState = 'active' | 'failing' | 'disabled';

/** What removing an endpoint came to: removed, still used by alerts, or claimed by another request meanwhile. */
export type Retired =
  | { readonly removed: true }
  | { readonly removed: false; readonly usedBy: { readonly count: number; readonly ids: readonly Types.ObjectId[] } }
  | { readonly removed: false; readonly busy: true };

export function endpointState(e: Pick<Endpoint, 'disabled_at' | 'failing_since'>): EndpointState {
  return e.disabled_at ? 'disabled' : e.failing_since ? 'failing' : 'active';
}

/** Endpoints stored before channels have none: they are webhooks. */
export function channelOf(e: Pick<Endpoint, 'channel'>): AlertChannel {
  return e.channel ?? 'webhook';
}

/** The endpoint's target as answers and events show it: a chat webhook's URL only redacted. */
export function shownUrl(e: Pick<Endpoint, 'url' | 'shown_url'>): string {
  return e.shown_url ?? e.url;
}

/** What a delivery needs to reach an endpoint, its sealed parts opened. */
export interface DeliveryEndpoint {
  readonly endpoint: Endpoint;
  readonly channel: AlertChannel;
  /** The URL to POST to (webhook), the address to mail (e-mail), or a chat service's sealed target opened (target.ts). */
  readonly target: string;
  /** The webhook's signing secrets, its own first; none for the other channels, which are not signed. */
  readonly secrets: string[];
  /**
   * Why nothing may be sent: a sealed part of the endpoint did not open (the endpoint is disabled
   * with this reason, `target` and `secrets` are empty); null when it can be reached.
   */
  readonly unusable: string | null;
}

/** `whsec_` and 24 random bytes in base64, the form standardwebhooks reads: a webhook endpoint's signing secret. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** The sealed fields a read must select to open an endpoint's target and secrets. */
export const SECRETS = '+secret_sealed +legacy_secrets_sealed +target_sealed';

/** The reason of an endpoint whose sealed target or secret does not open; posting its alert again stores them anew. */
export const UNSEALABLE_REASON =
  'its sealed target or signing secret does not open (moved from another record, altered, or sealed under another APP_KEY); post the alert again to store it anew';

const { endpointSecret, endpointLegacySecrets, endpointTarget } = SEALED_FIELDS;

export type SealedParts = Pick<EndpointFields, '_id' | 'secret_sealed' | 'legacy_secrets_sealed' | 'target_sealed'>;

/** The endpoint's sealed target and signing secrets, opened; null when any of them does not open. */
export function openedParts(appKey: Buffer, doc: SealedParts): { target: string | null; secrets: string[] } | null {
  const own = doc.secret_sealed === undefined ? [] : [tryOpenFor(appKey, endpointSecret, doc._id, doc.secret_sealed)];
  const legacy = (doc.legacy_secrets_sealed ?? []).map((l) => tryOpenFor(appKey, endpointLegacySecrets, doc._id, l));
  const target = doc.target_sealed === undefined ? null : tryOpenFor(appKey, endpointTarget, doc._id, doc.target_sealed);
  const secrets = [...own, ...legacy];
  if (secrets.includes(null) || (doc.target_sealed !== undefined && target === null)) return null;
  return { target, secrets: secrets as string[] };
}
