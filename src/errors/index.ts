/**
 * The small set of named errors the program throws. Code matches on `name`/class, never on message
 * text. HTTP answers are made from them in one place (http/error-handler.ts).
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
  constructor(message: string, readonly retryAfterMs: number, options?: { cause?: unknown }) {
    super(message, options);
  }
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

/** 502: the upstream could not do what the request waited for. */
export class UpstreamFailedError extends HttpError {
  override readonly name = 'UpstreamFailedError';
  constructor(message: string) {
    super(502, message);
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
