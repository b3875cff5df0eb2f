/**
 * Access tokens of the simulator's token endpoints: signed with a key that lives as long as the
 * simulator process, carrying their expiry. A token from another simulator (or a restarted one) is
 * foreign and refused as InvalidToken, an expired one as TokenExpired, as the real service does.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { TokenFlavour } from '../upstream/creators/credentials.js';

interface Payload {
  readonly cid: string;
  readonly f: TokenFlavour;
  readonly exp: number;
  readonly n: string;
}

export type Verdict =
  { readonly ok: true; readonly flavour: TokenFlavour } | { readonly ok: false; readonly reason: 'TokenExpired' | 'InvalidToken' };

/** LwA access tokens start with "Atza|"; Cognito's are JWT-like. Only the look differs. */
const LWA_PREFIX = 'Atza|';

export class TokenIssuer {
  readonly #key = randomBytes(32);

  issue(clientId: string, flavour: TokenFlavour, ttlSeconds: number, now: number): string {
    const payload: Payload = { cid: clientId, f: flavour, exp: now + ttlSeconds * 1000, n: randomBytes(6).toString('base64url') };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${flavour === 'lwa' ? LWA_PREFIX : ''}${body}.${this.#sign(body)}`;
  }

  verify(token: string, now: number): Verdict {
    const raw = token.startsWith(LWA_PREFIX) ? token.slice(LWA_PREFIX.length) : token;
    const [body, sig, extra] = raw.split('.');
    if (!body || !sig || extra !== undefined) return { ok: false, reason: 'InvalidToken' };
    const want = Buffer.from(this.#sign(body));
    const got = Buffer.from(sig);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, reason: 'InvalidToken' };
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
    if (now >= payload.exp) return { ok: false, reason: 'TokenExpired' };
    return { ok: true, flavour: payload.f };
  }

  #sign(body: string): string {
    return createHmac('sha256', this.#key).update(body).digest('base64url');
  }
}
