/**
 * The simulator's HTTP surface: the token endpoints, the catalog operations, and its own control
 * routes under `/__` (faults, stats and the ground truth of changes), which the real service does
 * not have.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { ASIN_RE, COUNTRY_CODES } from '../core/identifiers.js';
import { catalogRoutes } from './catalog-routes.js';
import { faultsPatchSchema } from './faults.js';
import type { SimulatorState } from './state.js';
import { tokenRoutes } from './token-routes.js';
import { errorBody } from './wire.js';

/** `/__truth` looks this far back from `until` when `since` is not given. */
const TRUTH_WINDOW_MS = 86_400_000;
/** Changes one `/__truth` answer lists at most; `truncated` says there were more. */
const TRUTH_LIMIT = 10_000;

/** A query parameter given once: express makes a repeated one an array. */
const once = z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be given once') });
const epochMs = once.regex(/^\d{1,15}$/, 'must be a time in epoch milliseconds').transform(Number);
const truthQuerySchema = z.strictObject(
  {
    country: once.transform((v) => v.toUpperCase()).pipe(z.enum(COUNTRY_CODES, { error: `must be one of ${COUNTRY_CODES.join(', ')}` })),
    asin: once.transform((v) => v.toUpperCase()).pipe(z.string().regex(ASIN_RE, 'must be 10 letters or digits')),
    since: epochMs.optional(),
    until: epochMs.optional(),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `unknown parameter ${issue.keys.join(', ')}` : undefined) },
);

export function buildSimulatorApp(state: SimulatorState): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(tokenRoutes(state));
  app.use(catalogRoutes(state));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/__stats', (_req, res) => {
    res.json(state.stats.snapshot());
  });
  app.get('/__faults', (_req, res) => {
    res.json(state.faults.current);
  });
  app.post('/__faults', express.json({ limit: '16kb' }), (req, res) => {
    const patch = faultsPatchSchema.safeParse(req.body ?? {});
    if (!patch.success) {
      res
        .status(422)
        .json({ message: 'invalid faults', errors: patch.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`) });
      return;
    }
    const faults = state.faults.update(patch.data);
    state.logger.info({ faults }, 'simulator faults changed');
    res.json(faults);
  });
  app.delete('/__faults', (_req, res) => {
    res.json(state.faults.reset());
  });
  // Ground truth for tests and benchmarks, never used by the product: when a product's price or
  // availability, as our client would read them, changed in [since, until] (by default the last
  // 24 h of the simulator's clock), and to what.
  app.get('/__truth', (req, res) => {
    const q = truthQuerySchema.safeParse(req.query);
    if (!q.success) {
      const issue = q.error.issues[0]!;
      res.status(400).json({ message: `${issue.path.join('.') || 'query'}: ${issue.message}` });
      return;
    }
    const { country, asin } = q.data;
    const until = q.data.until ?? state.now();
    const since = q.data.since ?? until - TRUTH_WINDOW_MS;
    if (since > until) {
      res.status(400).json({ message: 'since: must not be after until' });
      return;
    }
    const truth = state.catalog.truth(country, asin, since, until, TRUTH_LIMIT);
    if (truth.kind !== 'found') {
      res.status(404).json({ message: `${asin} is ${truth.kind === 'not_found' ? 'not found' : 'not accessible'} in ${country}` });
      return;
    }
    res.json({
      country,
      asin,
      since,
      until,
      mean_interval_ms: truth.meanIntervalMs,
      changes: truth.changes,
      truncated: truth.truncated,
    });
  });

  // A path the API does not have gets what a web server in front would answer, not the API's
  // ResourceNotFound (which means "no results"): a client pointed at a wrong base URL must be able
  // to tell the two apart.
  app.use((_req, res) => {
    res
      .status(404)
      .type('html')
      .send('<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n');
  });
  // Bodies that are not JSON (or too large) get the service's CannotParse answer, never a stack.
  app.use((err: Error & { status?: number; type?: string }, _req: Request, res: Response, _next: NextFunction) => {
    const status = err.status ?? 500;
    if (status >= 500) state.logger.error({ err }, 'simulator failed');
    if (status === 400 || status === 413 || status === 415) {
      res.status(400).json(errorBody('ValidationException', 'The request body could not be parsed.', { reason: 'CannotParse' }));
      return;
    }
    res.status(500).json(errorBody('InternalServerException', 'Internal server error.'));
  });
  return app;
}
