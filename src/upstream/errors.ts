/**
 * Typed upstream failures. Each extends one of the program's three base classes so the queue
 * workers can decide without knowing the upstream: RateLimitedError → wait `retryAfterMs` and retry;
 * RetryableError → back off and retry; UnrecoverableError → fail the job (and, for NotEligible,
 * stop the country and alert). Code matches on the class, never on the message.
 */
import { RateLimitedError, RetryableError, UnrecoverableError } from '../errors/index.js';
import type { Country } from '../catalog/identifiers.js';

/** 429 ThrottleException: the country's quota (per second or per day) is spent. */
export class UpstreamRateLimitedError extends RateLimitedError {
  override readonly name = 'UpstreamRateLimitedError';
  constructor(readonly country: Country, retryAfterMs: number, readonly quotaCode?: string) {
    super(`upstream throttled ${country}${quotaCode ? ` (${quotaCode})` : ''}; retry after ${retryAfterMs} ms`, retryAfterMs);
  }
}

/**
 * The credential was refused: by the token endpoint, or by the catalog twice in a row (the client
 * refreshes the token once on a 401 before giving up). Fatal until an operator fixes it.
 */
export class UpstreamAuthError extends UnrecoverableError {
  override readonly name = 'UpstreamAuthError';
  constructor(readonly country: Country, readonly reason: string, message: string) {
    super(`upstream refused the credential for ${country} (${reason}): ${message}`);
  }
}

/**
 * 403 AccessDenied (AssociateNotEligible, …) or 400 InvalidAssociate: the account may not use the
 * API in this marketplace, typically after too few qualified sales. Fatal for the whole country.
 */
export class UpstreamNotEligibleError extends UnrecoverableError {
  override readonly name = 'UpstreamNotEligibleError';
  constructor(readonly country: Country, readonly reason: string, message: string) {
    super(`upstream account not eligible in ${country} (${reason}): ${message}`);
  }
}

/** A request the upstream would refuse, or did refuse (400 ValidationException): no retry helps. */
export class UpstreamInvalidRequestError extends UnrecoverableError {
  override readonly name = 'UpstreamInvalidRequestError';
  constructor(message: string, readonly reason = 'Other', readonly fields: readonly { name: string; message: string }[] = []) {
    super(message);
  }
}

/** 5xx, a network failure, a timeout or an answer we cannot read: a later attempt may succeed. */
export class UpstreamUnavailableError extends RetryableError {
  override readonly name = 'UpstreamUnavailableError';
  constructor(message: string, readonly status?: number, options?: { cause?: unknown }) {
    super(message, options);
  }
}
