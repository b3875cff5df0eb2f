import type { Request, RequestHandler, Response } from 'express';
import type { AppContext } from '../context.js';
import type { AccountUser } from '../../models/user.js';
import { UnauthenticatedError } from '../../core/errors.js';
import { TOKEN_LENGTH } from '../../users/token.js';

/**
 * The token of a request, in the order Laravel's TokenGuard reads it: `api_token` in the query,
 * then `api_token` in the body (JSON or form), then `Authorization: Bearer`. Anything that is not a
 * single string (an array from a repeated parameter, an object) counts as no token.
 */
export function tokenOf(req: Request): string | undefined {
  const fromQuery = req.query.api_token;
  if (typeof fromQuery === 'string' && fromQuery !== '') return fromQuery;
  if (fromQuery !== undefined) return undefined;
  const body: unknown = req.body;
  if (body && typeof body === 'object' && !Array.isArray(body) && Object.hasOwn(body, 'api_token')) {
    const fromBody = (body as Record<string, unknown>).api_token;
    return typeof fromBody === 'string' && fromBody !== '' ? fromBody : undefined;
  }
  const header = req.headers.authorization;
  if (typeof header === 'string') {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (m?.[1]) return m[1];
  }
  return undefined;
}

// Keyed by the request and by its response, so that handlers (which have `res`) and rate-limit key
// functions (which have `req`) both find the user; entries go with the objects.
const users = new WeakMap<Request | Response, AccountUser>();

/** The authenticated user of a request that went through `authenticate`. */
export function userOf(res: Response): AccountUser {
  const user = users.get(res);
  if (!user) throw new UnauthenticatedError();
  return user;
}

/** Rate-limit key of an authenticated request: its account, so a rotated token keeps its count. */
export function userKey(req: Request): string {
  const user = users.get(req);
  return user ? `user:${user._id.toHexString()}` : 'anonymous';
}

/**
 * The account API's guard: 401 `{"message":"Unauthenticated."}` for a missing, unknown or over-long token.
 * The token is removed from the body so that input schemas see only the fields of the route.
 */
export function authenticate(ctx: Pick<AppContext, 'users'>): RequestHandler {
  return async (req, res, next) => {
    const token = tokenOf(req);
    if (req.body && typeof req.body === 'object' && !Array.isArray(req.body)) delete (req.body as Record<string, unknown>).api_token;
    if (token === undefined || token.length > TOKEN_LENGTH) return next(new UnauthenticatedError());
    const user = await ctx.users.findByToken(token);
    if (!user) return next(new UnauthenticatedError());
    users.set(req, user);
    users.set(res, user);
    next();
  };
}
