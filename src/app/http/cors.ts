import type { RequestHandler } from 'express';

/**
 * CORS for public, credential-free endpoints: any origin may read them (`*`, so no cookies or
 * Authorization ever ride along), and a preflight is answered here, before rate limiting, as
 * Laravel's global HandleCors middleware does. Written out rather than pulling in a package: the
 * whole policy is these few headers.
 */
export interface PublicCorsOptions {
  /** Methods the endpoints answer (OPTIONS is added). */
  readonly methods: readonly string[];
  /** How long browsers may cache a preflight, in seconds. */
  readonly maxAgeSeconds?: number;
}

// Browsers can read only "simple" response headers unless told; clients pacing themselves need these.
const EXPOSED = [
  'Retry-After',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit',
  'RateLimit-Policy',
  'X-Request-Id',
];
// What a browser may send beyond the CORS-safelisted request headers.
const ALLOWED_HEADERS = ['Accept', 'Accept-Language', 'Content-Type', 'X-Requested-With', 'X-Request-Id'];

export function publicCors(opts: PublicCorsOptions): RequestHandler {
  const methods = [...new Set([...opts.methods, 'OPTIONS'])].join(', ');
  const maxAge = String(opts.maxAgeSeconds ?? 3600);
  return (req, res, next) => {
    res.set('Access-Control-Allow-Origin', '*');
    if (req.method !== 'OPTIONS') {
      res.set('Access-Control-Expose-Headers', EXPOSED.join(', '));
      next();
      return;
    }
    res.set({
      'Access-Control-Allow-Methods': methods,
      'Access-Control-Allow-Headers': ALLOWED_HEADERS.join(', '),
      'Access-Control-Max-Age': maxAge,
    });
    res.status(204).end();
  };
}
