import { createHash } from 'node:crypto';
import type { AlertFields, AlertKind } from '../../models/alert.js';

/**
 * What makes two alerts of an account on one product the same alert: the kind, the options that
 * decide when it fires, and where it delivers (the endpoint's key: a webhook's URL, a chat hook's
 * keyed hash, `mailto:` and the address). Whether it is paused, its re-arming state and the
 * reference price it took are its state, not what it is: posting it again with another `paused`
 * updates that alert.
 */
export type IdentityOptions = Pick<AlertFields, 'kind' | 'price' | 'percent'> &
  Partial<Pick<AlertFields, 'rank' | 'amount' | 'reference' | 'days' | 'rearm_above' | 'rearm_after_ms'>>;

/** The options each kind fires on, with their defaults, so that an option a kind ignores never tells two alerts apart. */
function firingOptions(o: IdentityOptions): Record<string, unknown> {
  const kind: AlertKind = o.kind;
  switch (kind) {
    case 'price_below':
      return { price: o.price, rearm_above: o.rearm_above ?? null, rearm_after_ms: o.rearm_after_ms ?? null };
    case 'price_drop':
    case 'price_rise':
      return { percent: o.percent ?? null, amount: o.amount ?? null, reference: o.reference ?? 'previous', days: o.days ?? null };
    case 'rank_below':
    case 'rank_above':
      return { rank: o.rank ?? null };
    default:
      return {};
  }
}

/**
 * The alert's identity within its account, country, ASIN and kind (the unique index's last field):
 * a hash of its firing options and its endpoint's key. Identical posts meet at that index.
 */
export function alertIdentity(options: IdentityOptions, targetKey: string): string {
  const canonical = JSON.stringify([1, options.kind, firingOptions(options), targetKey]);
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 32);
}
