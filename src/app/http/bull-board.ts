import { QUEUE_CLASSES } from '../../../jobs/queue-names.js';
import { Router, type RequestHandler } from 'express';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { AppContext } from '../context.js';
import { authFailureGuard } from './auth-failures.js';
import { sameSecret } from './secret.js';

/** One constant: Bull Board's base path must equal its mount path, or its assets 404. */
export const BULL_BOARD_PATH = '/admin/queues';

function basicAuth(user: string, password: string): RequestHandler {
  return (req, res, next) => {
    const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(req.headers.authorization ?? '');
    const [u, ...rest] = m?.[1] ? Buffer.from(m[1], 'base64').toString('utf8').split(':') : [];
    if (u !== undefined && sameSecret(u, user) && sameSecret(rest.join(':'), password)) return next();
    res.set('WWW-Authenticate', 'Basic realm="shelfwatch queues", charset="UTF-8"').status(401).json({ message: 'Unauthenticated.' });
  };
}

/**
 * Bull Board on the api role, behind HTTP Basic credentials from the configuration. Without them
 * the route does not exist (404). Read-only unless BULL_BOARD_READONLY=false: a browser resends
 * Basic credentials by itself, so write buttons would be open to cross-site requests.
 */
export function bullBoardRoutes(ctx: AppContext): Router {
  const router = Router();
  const conf = ctx.board;
  if (!conf) return router;
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: [
      ...ctx.config.countries.flatMap((c) =>
        QUEUE_CLASSES.map((cls) => new BullMQAdapter(ctx.jobs.queue(c, cls), { readOnlyMode: conf.readOnly })),
      ),
      new BullMQAdapter(ctx.deliveryJobs.queue, { readOnlyMode: conf.readOnly }),
    ],
    serverAdapter,
    options: { uiConfig: { boardTitle: 'shelfwatch' } },
  });
  router.use(
    BULL_BOARD_PATH,
    // Wrong passwords count against the client address, so they cannot be tried at will.
    ...authFailureGuard(ctx).around(basicAuth(conf.user, conf.password)),
    (_req, res, next) => {
      // The board is a page with its own scripts and styles: the API's `default-src 'none'` would blank it.
      res.set(
        'Content-Security-Policy',
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline' https:; img-src 'self' data: https:; font-src 'self' data: https:; frame-ancestors 'none'",
      );
      next();
    },
    serverAdapter.getRouter() as RequestHandler,
  );
  return router;
}
