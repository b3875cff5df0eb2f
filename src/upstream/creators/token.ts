/**
 * OAuth2 client-credentials tokens for one Creators API credential: fetched on first use, cached,
 * renewed shortly before they expire, with one request in flight however many callers wait.
 */
import type { Dispatcher } from 'undici';
import type { Country } from '../../catalog/identifiers.js';
import { UpstreamAuthError, UpstreamConfigError, UpstreamRateLimitedError, UpstreamUnavailableError } from '../../errors/index.js';
import type { Credential } from './credentials.js';
import { post, retryAfterMs } from './http.js';
import { tokenErrorSchema, tokenResponseSchema } from './wire.js';

/** LwA and Cognito both default to one hour when expires_in is missing. */
const DEFAULT_TTL_S = 3600;
/** Renew this long before expiry, as the official SDK does. */
const RENEW_MARGIN_MS = 30_000;

interface Cached {
  readonly token: string;
  readonly renewAt: number;
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
  /** Token requests sent, for logs and tests. */
  requests = 0;
  readonly #now: () => number;

  constructor(private readonly opts: TokenSourceOptions) {
    this.#now = opts.now ?? Date.now;
  }

  /** A token believed valid now. */
  async get(): Promise<string> {
    const c = this.#cached;
    if (c && this.#now() < c.renewAt) return c.token;
    this.#inflight ??= this.#fetch().finally(() => {
      this.#inflight = undefined;
    });
    return (await this.#inflight).token;
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
      const cached = { token: ok.data.access_token, renewAt: started + ttlMs - Math.min(RENEW_MARGIN_MS, ttlMs / 2) };
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
