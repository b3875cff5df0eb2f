/**
 * OAuth2 client-credentials tokens for one Creators API credential: fetched on first use (or ahead
 * of it, warm()), cached, renewed in the background shortly before they expire, with one request
 * in flight however many callers wait. No call waits for a renewal while the old token is valid.
 */
import type { Dispatcher } from 'undici';
import type { Country } from '../../core/identifiers.js';
import { UpstreamAuthError, UpstreamConfigError, UpstreamRateLimitedError, UpstreamUnavailableError } from '../../core/errors.js';
import type { Credential } from './credentials.js';
import { post, retryAfterMs } from './http.js';
import { tokenErrorSchema, tokenResponseSchema } from './wire.js';

/** LwA and Cognito both default to one hour when expires_in is missing. */
const DEFAULT_TTL_S = 3600;
/** Renew this long before expiry, as the official SDK does. */
const RENEW_MARGIN_MS = 30_000;
/** After a background renewal failed, the next waits this long (the old token is still valid). */
const RENEW_RETRY_MS = 5_000;

interface Cached {
  readonly token: string;
  readonly renewAt: number;
  readonly expiresAt: number;
}

export interface TokenSourceOptions {
  readonly credential: Credential;
  /** Whose calls these are: named in errors. Tokens are per credential, shared across countries. */
  readonly country: Country;
  readonly dispatcher: Dispatcher;
  readonly timeoutMs: number;
  readonly now?: () => number;
}

export class TokenSource {
  #cached: Cached | undefined;
  #inflight: Promise<Cached> | undefined;
  /** When a background renewal may be tried again after one failed. */
  #renewAfter = 0;
  /** Token requests sent, for logs and tests. */
  requests = 0;
  readonly #now: () => number;

  constructor(private readonly opts: TokenSourceOptions) {
    this.#now = opts.now ?? Date.now;
  }

  /**
   * A token believed valid now. Past its renewal time but before it expires, the cached token is
   * answered at once while a renewal runs in the background: a call never waits for one.
   */
  async get(): Promise<string> {
    const c = this.#cached;
    const now = this.#now();
    if (c && now < c.renewAt) return c.token;
    if (c && now < c.expiresAt) {
      if (now >= this.#renewAfter) void this.#renew().catch(() => (this.#renewAfter = this.#now() + RENEW_RETRY_MS));
      return c.token;
    }
    return (await this.#renew()).token;
  }

  /** Fetches a token now, in the background, so the first call does not wait for it. */
  warm(): void {
    if (!this.#cached) void this.#renew().catch(() => undefined);
  }

  #renew(): Promise<Cached> {
    this.#inflight ??= this.#fetch().finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  /**
   * The catalog refused `token`: forget it so the next get() fetches a new one. Only that token is
   * dropped, so when many calls fail with the same old token there is still one refresh.
   */
  invalidate(token: string): void {
    if (this.#cached?.token === token) this.#cached = undefined;
  }

  async #fetch(): Promise<Cached> {
    const { credential: cred, dispatcher, timeoutMs } = this.opts;
    this.requests++;
    const started = this.#now();
    let headers: Record<string, string>;
    let body: string;
    if (cred.version.flavour === 'lwa') {
      // CONFLICT: Amazon's SDK sends LwA (v3.x) token requests as a JSON body; goark
      // sends a form with HTTP Basic. We follow Amazon's own SDK, the reference the service is
      // tested against.
      headers = { 'content-type': 'application/json', accept: 'application/json' };
      body = JSON.stringify({
        grant_type: 'client_credentials',
        client_id: cred.id,
        client_secret: cred.secret,
        scope: cred.version.scope,
      });
    } else {
      headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
      body = new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: cred.id,
        client_secret: cred.secret,
        scope: cred.version.scope,
      }).toString();
    }
    const res = await post(dispatcher, cred.tokenUrl, headers, body, timeoutMs);
    if (res.status === 200) {
      const ok = tokenResponseSchema.safeParse(res.json);
      if (!ok.success)
        throw new UpstreamUnavailableError(`token endpoint answered 200 without a usable token (${ok.error.issues[0]?.message})`, 200);
      const ttlMs = (ok.data.expires_in ?? DEFAULT_TTL_S) * 1000;
      // ...but never more than half the lifetime, so short-lived tokens are still used at all.
      const cached = {
        token: ok.data.access_token,
        renewAt: started + ttlMs - Math.min(RENEW_MARGIN_MS, ttlMs / 2),
        expiresAt: started + ttlMs,
      };
      this.#renewAfter = 0;
      this.#cached = cached;
      return cached;
    }
    if (res.status === 429)
      throw new UpstreamRateLimitedError(this.opts.country, retryAfterMs(res.headers['retry-after'], this.#now()) ?? 1000, 'token');
    if (res.status >= 500) throw new UpstreamUnavailableError(`token endpoint answered ${res.status}`, res.status);
    // A token endpoint answers a refused credential with 400 or 401; a 404 means the URL is not a
    // token endpoint at all, which no new credential would fix.
    if (res.status === 404) {
      throw new UpstreamConfigError(
        this.opts.country,
        'NotATokenEndpoint',
        `${cred.tokenUrl} answered 404: it is not an OAuth2 token endpoint. Check CREATORS_TOKEN_URL_${this.opts.country} ` +
          '(unset: the endpoint of the credential version; with UPSTREAM=simulator, SIMULATOR_URL)',
      );
    }
    const err = tokenErrorSchema.safeParse(res.json);
    const reason = err.success ? err.data.error : `HTTP ${res.status}`;
    throw new UpstreamAuthError(
      this.opts.country,
      reason,
      err.success ? (err.data.error_description ?? reason) : 'the token endpoint refused the credential',
    );
  }
}
