import express, { type Express, type Router } from 'express';
import helmet from 'helmet';
import type { AppContext } from '../context.js';
import { requestLogger } from './request-log.js';
import { errorHandler, notFoundHandler } from './error-handler.js';
import { rejectMalformedPaths } from './path-guard.js';
import { versionRoutes } from './routes/version.js';
import { healthRoutes } from './routes/health.js';

/** Routers the api role adds on top of the base routes; each is built from the context once. */
export type RouteFactory = (ctx: AppContext) => Router;

export function buildApp(ctx: AppContext, routers: readonly RouteFactory[] = []): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', ctx.config.http.trustProxy);
  // Repeated parameters become arrays (so `?page=1&page=2` is refused, not guessed at), and brackets
  // stay literal (`country[$ne]=x` is a parameter named `country[$ne]`, never an operator object).
  app.set('query parser', 'simple');
  app.set('json spaces', 0);

  app.use(requestLogger(ctx.logger));
  app.use(
    helmet({
      // A JSON API: no documents to frame or scripts to load; CORS is decided per router.
      crossOriginResourcePolicy: false,
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    }),
  );
  app.use(rejectMalformedPaths());
  app.use(express.json({ limit: ctx.config.http.bodyLimit, strict: false }));
  app.use(express.urlencoded({ limit: ctx.config.http.bodyLimit, extended: false, parameterLimit: 100 }));

  app.use(versionRoutes());
  app.use(healthRoutes(ctx));
  for (const router of routers) app.use(router(ctx));

  app.use(notFoundHandler());
  app.use(errorHandler(ctx.logger));
  return app;
}
