/**
 * The two token endpoints of the Creators API on the simulator's host:
 * `/auth/o2/token` as Login with Amazon answers it (v3.x credentials) and `/oauth2/token` as Amazon
 * Cognito does (v2.x). OAuth2 client credentials; errors in RFC 6749 §5.2 shape.
 */
import express, { type Request, type Response, type Router } from 'express';
import { TOKEN_PATHS, type TokenFlavour } from '../upstream/creators/credentials.js';
import type { SimulatorState } from './state.js';

const SCOPES: Readonly<Record<TokenFlavour, string>> = { lwa: 'creatorsapi::default', cognito: 'creatorsapi/default' };

function basicAuth(req: Request): { id: string; secret: string } | undefined {
  const m = /^Basic\s+(\S+)$/i.exec(req.get('authorization') ?? '');
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = text.indexOf(':');
  return i < 0 ? undefined : { id: decodeURIComponent(text.slice(0, i)), secret: decodeURIComponent(text.slice(i + 1)) };
}

function handler(state: SimulatorState, flavour: TokenFlavour) {
  return (req: Request, res: Response): void => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const fail = (status: number, error: string, description: string): void => {
      state.stats.token(false);
      res.status(status).json({ error, error_description: description });
    };
    // Cognito's token endpoint takes only form bodies; LwA takes forms and (as Amazon's SDK sends) JSON.
    if (flavour === 'cognito' && !req.is('application/x-www-form-urlencoded')) {
      return fail(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
    }
    if (body.grant_type !== 'client_credentials') return fail(400, 'unsupported_grant_type', 'grant_type must be client_credentials');
    const basic = basicAuth(req);
    const id = basic?.id ?? body.client_id;
    const secret = basic?.secret ?? body.client_secret;
    if (id !== state.config.clientId || secret !== state.config.clientSecret)
      return fail(401, 'invalid_client', 'Client authentication failed');
    if (body.scope !== SCOPES[flavour]) return fail(400, 'invalid_scope', `scope must be ${SCOPES[flavour]}`);
    const ttl = state.config.tokenTtlSeconds;
    state.stats.token(true);
    res.set('Cache-Control', 'no-store').json({
      access_token: state.tokens.issue(id, flavour, ttl, state.now()),
      token_type: flavour === 'lwa' ? 'bearer' : 'Bearer',
      expires_in: ttl,
    });
  };
}

export function tokenRoutes(state: SimulatorState): Router {
  const router = express.Router();
  const bodies = [express.json({ limit: '16kb' }), express.urlencoded({ extended: false, limit: '16kb' })];
  router.post(TOKEN_PATHS.lwa, ...bodies, handler(state, 'lwa'));
  router.post(TOKEN_PATHS.cognito, ...bodies, handler(state, 'cognito'));
  return router;
}
