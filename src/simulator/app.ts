/**
 * The simulator's HTTP surface: the token endpoints, the catalog operations, and its own control
 * routes under `/__` (faults and stats), which the real service does not have.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { catalogRoutes } from './catalog-routes.js';
import { faultsPatchSchema } from './faults.js';
import type { SimulatorState } from './state.js';
import { tokenRoutes } from './token-routes.js';
import { errorBody } from './wire.js';

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
