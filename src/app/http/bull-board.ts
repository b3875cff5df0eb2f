import { QUEUE_CLASSES } from '../../../jobs/queue-names.js';
import { Router, type RequestHandler } from 'express';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { AppContext } from '../context.js';
import type { Country } from '../../core/identifiers.js';
import type { CountryBreakers } from '../../quota/breaker.js';
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

/** How often a country queue's description reads its breaker at most (the board polls every few seconds). */
const BREAKER_READ_EVERY_MS = 2_000;

/**
 * A country queue on the board, described by its breaker while the upstream refuses the country:
 * the board shows the queue paused, and this says why and when the next probe goes. The board asks
 * for descriptions synchronously, so each answer is the last read and asks for a fresh one.
 */
class CountryQueueAdapter extends BullMQAdapter {
  #text = '';
  #readAt = 0;

  constructor(
    queue: ConstructorParameters<typeof BullMQAdapter>[0],
    options: ConstructorParameters<typeof BullMQAdapter>[1],
    private readonly breaker: () => ReturnType<CountryBreakers['status']>,
    private readonly country: Country,
  ) {
    super(queue, options);
  }

  override getDescription(): string {
    const now = Date.now();
    if (now - this.#readAt >= BREAKER_READ_EVERY_MS) {
      this.#readAt = now;
      this.breaker().then(
        (b) => {
          this.#text =
            b.state === 'open'
              ? `Paused by the breaker: the upstream is refusing ${this.country} (${b.kind}: ${b.reason}) since ${new Date(b.since).toISOString()}; next probe ${new Date(b.probeAt).toISOString()}.`
              : '';
        },
        () => undefined,
      );
    }
    return this.#text;
  }
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
        QUEUE_CLASSES.map(
          (cls) => new CountryQueueAdapter(ctx.jobs.queue(c, cls), { readOnlyMode: conf.readOnly }, () => ctx.breakers.status(c), c),
        ),
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
