import type { RequestHandler } from 'express';
import { MalformedPathError } from '../../core/errors.js';

/**
 * Refuses, with 400, a request whose path does not percent-decode, before any router sees it. The
 * router decodes a route's parameters only once the route matches and throws a URIError from inside
 * routing; a mounted sub-app (Bull Board, the docs' static files) would answer in a shape of its
 * own. Checked here, every path answers alike, in the error shape of src/app/http/error-handler.ts.
 */
export function rejectMalformedPaths(): RequestHandler {
  return (req, _res, next) => {
    try {
      decodeURIComponent(req.path);
    } catch {
      return next(new MalformedPathError());
    }
    next();
  };
}
