import type { RequestHandler } from 'express';
import { NotFoundError, UnauthenticatedError } from '../../core/errors.js';
import { sameSecret } from './secret.js';

/**
 * Who may read /metrics. The metrics name queues, countries and the quota's state, and each scrape
 * reads Redis: not for the public internet. METRICS_TOKEN requires a bearer token wherever
 * /metrics is served; without it (and without METRICS_PORT, which moves /metrics off the public
 * port) only a client on this host is served.
 */

/** `Authorization: Bearer <token>` with exactly this token, or 401. */
export function bearerToken(token: string): RequestHandler {
  return (req, res, next) => {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (m?.[1] && sameSecret(m[1], token)) return next();
    res.set('WWW-Authenticate', 'Bearer realm="shelfwatch metrics"');
    next(new UnauthenticatedError());
  };
}

const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|::ffff:127(\.\d{1,3}){3})$/;
// A proxy on this host connects from loopback on behalf of anyone; its headers give it away.
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'];

/**
 * Only a client on this host, talking to us directly: a loopback peer with no forwarding header.
 * Judged on the socket, not on `req.ip`, so TRUST_PROXY cannot widen it. Others get 404, as if
 * there were no /metrics.
 */
export const sameHostOnly: RequestHandler = (req, _res, next) => {
  const local = LOOPBACK.test(req.socket.remoteAddress ?? '') && FORWARDING_HEADERS.every((h) => req.headers[h] === undefined);
  next(local ? undefined : new NotFoundError());
};
