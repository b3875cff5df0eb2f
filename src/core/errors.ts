import type { Country } from './identifiers.js';
import { CLASS_WORDS, SHARE_VARIABLE, type QuotaClass } from './quota-classes.js';

/**
 * Every named error the program throws (but configuration and usage errors, which their own layers
 * raise before anything runs). Each extends one of three bases, so code decides by class, never by
 * message text: RetryableError (back off and retry), UnrecoverableError (no retry helps),
 * RateLimitedError (wait `retryAfterMs`); HttpError and its subclasses are answers, made into
 * HTTP in one place (src/app/http/error-handler.ts). Jobs map them in jobs/failure.ts.
 */

/** A job's payload does not fit its kind (written by an older version, or by hand): no retry helps. */
export class InvalidJobPayloadError extends Error {
  override readonly name = 'InvalidJobPayloadError';
}

/** Something went wrong that a later attempt may not repeat (network, 5xx, timeouts). */
export class RetryableError extends Error {
  override readonly name: string = 'RetryableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A job ran past its deadline (WORKER_JOB_TIMEOUT); a later attempt may not hang. */
export class JobTimeoutError extends RetryableError {
  override readonly name = 'JobTimeoutError';
}

/** The worker was shutting down and cut the job off at its drain's deadline; another attempt runs it again. */
export class WorkerShutdownError extends RetryableError {
  override readonly name = 'WorkerShutdownError';
}

/** No retry will help: bad input, a missing credential, an eligibility loss. */
export class UnrecoverableError extends Error {
  override readonly name: string = 'UnrecoverableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The other side asked us to slow down; `retryAfterMs` says for how long. */
export class RateLimitedError extends Error {
  override readonly name: string = 'RateLimitedError';
  constructor(
    message: string,
    readonly retryAfterMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A job's deadline passed while its call still waited for a permit: its class is backlogged, not
 * hung. It goes back to its queue, in its place, without spending an attempt.
 */
export class PermitWaitTimeoutError extends RateLimitedError {
  override readonly name = 'PermitWaitTimeoutError';
}

/** An HTTP answer other than success, with the Laravel-shaped body `{message}`. */
export class HttpError extends Error {
  override readonly name: string = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export class UnauthenticatedError extends HttpError {
  override readonly name = 'UnauthenticatedError';
  constructor() {
    super(401, 'Unauthenticated.');
  }
}

export class NotFoundError extends HttpError {
  override readonly name = 'NotFoundError';
  constructor(message = 'Not Found.') {
    super(404, message);
  }
}

/** 409: the resource is not in a state the request applies to (a delivery that is not undelivered, replayed). */
export class ConflictError extends HttpError {
  override readonly name = 'ConflictError';
  constructor(message: string) {
    super(409, message);
  }
}

/** 400: the request URL does not percent-decode (a lone `%`, a cut-off or overlong UTF-8 sequence). */
export class MalformedPathError extends HttpError {
  override readonly name = 'MalformedPathError';
  constructor() {
    super(400, 'The request URL is not valid percent-encoding.');
  }
}

export class ServiceUnavailableError extends HttpError {
  override readonly name = 'ServiceUnavailableError';
  constructor(message = 'Service Unavailable.', retryAfterSeconds = 5) {
    super(503, message, { 'Retry-After': String(retryAfterSeconds) });
  }
}

/** 429: a cap or the day's quota is spent; `Retry-After` says when to ask again (whole seconds, at least 1). */
export class TooManyRequestsError extends HttpError {
  override readonly name: string = 'TooManyRequestsError';
  constructor(message: string, retryAfterSeconds: number) {
    super(429, message, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

/**
 * 502: the upstream could not do what the request waited for. `reason` (the job's failure) is for
 * the log only, as it may quote the upstream's answers and hosts; the answer says what failed and,
 * given the request id, which id to quote when reporting it.
 */
export class UpstreamFailedError extends HttpError {
  override readonly name = 'UpstreamFailedError';
  constructor(
    readonly reason: string,
    requestId?: string,
  ) {
    super(502, `The upstream could not refresh the products.${requestId === undefined ? '' : ` Request id: ${requestId}.`}`);
  }
}

/** 422 with `errors: {field: [messages]}`; the summary follows Laravel's "(and N more errors)". */
export class ValidationError extends HttpError {
  override readonly name = 'ValidationError';
  constructor(readonly errors: Readonly<Record<string, readonly string[]>>) {
    super(422, summarize(errors));
  }
}

function summarize(errors: Readonly<Record<string, readonly string[]>>): string {
  const all = Object.values(errors).flat();
  const first = all[0];
  if (first === undefined) return 'The given data was invalid.';
  const more = all.length - 1;
  return more > 0 ? `${first} (and ${more} more error${more === 1 ? '' : 's'})` : first;
}

// ---- The upstream (any adapter of src/upstream/port.ts)

/**
 * Typed upstream failures. Each extends one of the program's three base classes so the queue
 * workers can decide without knowing the upstream: RateLimitedError → wait `retryAfterMs` and retry;
 * RetryableError → back off and retry; UnrecoverableError → fail the job (and, for NotEligible,
 * stop the country and alert). Code matches on the class, never on the message.
 */

/** 429 ThrottleException: the country's quota (per second or per day) is spent. */
export class UpstreamRateLimitedError extends RateLimitedError {
  override readonly name = 'UpstreamRateLimitedError';
  constructor(
    readonly country: Country,
    retryAfterMs: number,
    readonly quotaCode?: string,
    /** The answer said how long (Retry-After); otherwise retryAfterMs is the client's own guess. */
    readonly retryAfterGiven = false,
  ) {
    super(`upstream throttled ${country}${quotaCode ? ` (${quotaCode})` : ''}; retry after ${retryAfterMs} ms`, retryAfterMs);
  }
}

/**
 * The country's breaker is open (src/quota/breaker.ts): the upstream refuses the country, so no
 * call goes out until a probe gets through. A job that meets it waits, spending no attempt, until
 * about the next probe; its country's queues are paused meanwhile, so it stays queued.
 */
export class UpstreamRefusingError extends RateLimitedError {
  override readonly name = 'UpstreamRefusingError';
  constructor(
    readonly country: Country,
    readonly reason: string,
    retryAfterMs: number,
  ) {
    super(`the upstream is refusing ${country} (${reason}): no call until a probe gets through`, retryAfterMs);
  }
}

/**
 * The upstream refuses a whole country until an operator acts (a credential, an account, a
 * variable): no job of that country can succeed, so the workers stop its queues on any of these.
 */
export class UpstreamCountryError extends UnrecoverableError {
  override readonly name: string = 'UpstreamCountryError';
  constructor(
    readonly country: Country,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The credential was refused: by the token endpoint, or by the catalog twice in a row (the client
 * refreshes the token once on a 401 before giving up).
 */
export class UpstreamAuthError extends UpstreamCountryError {
  override readonly name = 'UpstreamAuthError';
  constructor(country: Country, reason: string, message: string) {
    super(country, reason, `upstream refused the credential for ${country} (${reason}): ${message}`);
  }
}

/**
 * 403 AccessDenied (AssociateNotEligible, …) or 400 InvalidAssociate: the account may not use the
 * API in this marketplace, typically after too few qualified sales.
 */
export class UpstreamNotEligibleError extends UpstreamCountryError {
  override readonly name = 'UpstreamNotEligibleError';
  constructor(country: Country, reason: string, message: string) {
    super(country, reason, `upstream account not eligible in ${country} (${reason}): ${message}`);
  }
}

/**
 * The upstream's answer shows that our configuration does not fit it: a catalog URL that routes
 * somewhere other than the API (a 404 that is not ResourceNotFound), a token URL that is no token
 * endpoint, a partner tag the marketplace refuses (400 InvalidPartnerTag). The message names the
 * variable to fix.
 */
export class UpstreamConfigError extends UpstreamCountryError {
  override readonly name = 'UpstreamConfigError';
  constructor(country: Country, reason: string, message: string) {
    super(country, reason, `upstream configuration for ${country} does not work (${reason}): ${message}`);
  }
}

/** A request the upstream would refuse, or did refuse (400 ValidationException): no retry helps. */
export class UpstreamInvalidRequestError extends UnrecoverableError {
  override readonly name = 'UpstreamInvalidRequestError';
  constructor(
    message: string,
    readonly reason = 'Other',
    readonly fields: readonly { name: string; message: string }[] = [],
  ) {
    super(message);
  }
}

/** 5xx, a network failure, a timeout or an answer we cannot read: a later attempt may succeed. */
export class UpstreamUnavailableError extends RetryableError {
  override readonly name = 'UpstreamUnavailableError';
  constructor(
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

// ---- The quota governor

/** Why the day has no call left for a lane: the cap, the forced-update share of it, or an upstream that said so. */
export type DaySpentReason = 'cap' | 'share' | 'spent';

/**
 * The quota day has no call left for this kind of work (QUOTA_PER_DAY, less what is kept for
 * forced updates, or the class's share of it). Retryable, but not before `retryAt`: the start of
 * the next quota day. `cls` names the class whose share is spent, when it is a share.
 */
export class DayQuotaSpentError extends RetryableError {
  override readonly name = 'DayQuotaSpentError';
  constructor(
    readonly country: Country,
    readonly reason: DaySpentReason,
    readonly retryAt: number,
    readonly cls: QuotaClass = 'forced',
  ) {
    super(
      reason === 'share'
        ? `the share of today's upstream quota in ${country} kept for ${CLASS_WORDS[cls]} is spent (${SHARE_VARIABLE[cls]}); it renews at ${new Date(retryAt).toISOString()}`
        : `today's upstream quota in ${country} is spent${reason === 'spent' ? ' (the upstream said so)' : ' (QUOTA_PER_DAY)'}; it renews at ${new Date(retryAt).toISOString()}`,
    );
  }
}

/** The governor stopped (shutdown) while a call waited for its permit. */
export class GovernorClosedError extends RetryableError {
  override readonly name = 'GovernorClosedError';
}

// ---- Accounts and the embedded default

/** 429 for an account that has used up its forced updates (ACCOUNT_MAX_UPDATES_PER_DAY). */
export class DailyUpdateLimitError extends TooManyRequestsError {
  override readonly name = 'DailyUpdateLimitError';
  constructor(
    readonly limit: number,
    retryAfterSeconds: number,
  ) {
    super(`You may force at most ${limit} updates a day (ACCOUNT_MAX_UPDATES_PER_DAY).`, retryAfterSeconds);
  }
}

/** 429 for an account that has used up a daily allowance other than forced updates (EAN imports, crawl pages). */
export class DailyAccountLimitError extends TooManyRequestsError {
  override readonly name = 'DailyAccountLimitError';
  constructor(
    readonly limit: number,
    what: string,
    variable: string,
    retryAfterSeconds: number,
  ) {
    super(`You may start at most ${limit} ${what} a day (${variable}); the count renews with the quota day.`, retryAfterSeconds);
  }
}

export class DuplicateEmailError extends Error {
  override readonly name = 'DuplicateEmailError';
}

export class UserNotFoundError extends Error {
  override readonly name = 'UserNotFoundError';
}

/**
 * A sealed secret (an API token's copy, a webhook secret, a chat webhook's URL) does not open: it
 * was moved from another record or field, altered, or sealed under another APP_KEY. What holds it
 * is unusable until the secret is stored anew; never a 5xx.
 */
export class SealedSecretError extends Error {
  override readonly name = 'SealedSecretError';
}

/** A part of the embedded default could not be had; the message says what to set instead. */
export class EmbeddedUnavailableError extends Error {
  override readonly name: string = 'EmbeddedUnavailableError';
}

/**
 * A file that is to carry secrets, or its directory, is one someone else could read, replace or
 * redirect (a symlink, another owner, group or other permissions): it is not written.
 */
export class UntrustedFileError extends EmbeddedUnavailableError {
  override readonly name = 'UntrustedFileError';
}

/**
 * A webhook URL whose host resolves to an address we do not call: private, loopback, link-local or
 * otherwise not public unicast (unless ENDPOINT_ALLOW_PRIVATE=true). At creation it is a 422 on
 * `webhook_url`; at delivery it fails the attempt, since DNS may answer otherwise later.
 */
export class WebhookTargetRefusedError extends RetryableError {
  override readonly name = 'WebhookTargetRefusedError';
}

/** A webhook attempt that did not get a 2xx: a network error, a timeout or another status. */
export class WebhookDeliveryError extends RetryableError {
  override readonly name: string = 'WebhookDeliveryError';
  /** How long the receiver asked us to wait before the next attempt (a 429's Retry-After), in ms; null when it did not say. */
  readonly retryAfterMs: number | null;
  constructor(
    message: string,
    /** The receiver's status code, when it answered at all (an SMTP reply code for e-mail). */
    readonly status: number | null,
    options?: { cause?: unknown; retryAfterMs?: number | null },
  ) {
    super(message, options);
    this.retryAfterMs = options?.retryAfterMs ?? null;
  }
}

/**
 * An e-mail the SMTP server did not accept, or could not be reached for. A delivery failure like a
 * webhook's, retried on the same schedule; `status` is the server's reply code when it gave one.
 */
export class EmailDeliveryError extends WebhookDeliveryError {
  override readonly name = 'EmailDeliveryError';
  /**
   * The server refused the recipient or the message for good (a 5xx reply to RCPT TO or DATA):
   * retrying sends the same refused mail again, so the delivery fails at once.
   */
  get permanent(): boolean {
    return this.status !== null && this.status >= 500 && this.refusedAt !== null;
  }
  constructor(
    message: string,
    status: number | null,
    options?: { cause?: unknown },
    /** The SMTP command the refusal answered, when it was RCPT TO or DATA. */
    readonly refusedAt: 'RCPT TO' | 'DATA' | null = null,
  ) {
    super(message, status, options);
  }
}

/**
 * Why an e-mail was not even offered to the SMTP server: its address has not said yes (pending),
 * said stop (unsubscribed), bounces (bounced), or a daily cap is spent. Never retried: a delivery
 * ends `failed` with the reason (replayable once the reason is gone); the test button answers 409 or 429.
 */
export class EmailNotSentError extends UnrecoverableError {
  override readonly name = 'EmailNotSentError';
  constructor(
    message: string,
    readonly reason: 'pending' | 'unsubscribed' | 'bounced' | 'account_cap' | 'address_cap',
    /** For a cap: when the count starts again. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
  }
}

/**
 * The receiver said it wants no more deliveries (410 Gone; a chat service's "this webhook no longer
 * exists"), so the endpoint is disabled. `reason` is what the endpoint's record and event say.
 */
export class WebhookGoneError extends UnrecoverableError {
  override readonly name = 'WebhookGoneError';
  constructor(readonly reason: string) {
    super(`${reason}: the endpoint is disabled`);
  }
}
