import { Router, type Request } from 'express';
import { QueueEvents, type Job } from 'bullmq';
import mongoose from 'mongoose';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import type { Country } from '../../catalog/identifiers.js';
import { ASIN_RE } from '../../catalog/identifiers.js';
import { oneCountryParam } from '../../catalog/world-query.js';
import { PRODUCT_HIDDEN_FIELDS, presentProduct } from '../../catalog/present.js';
import { productModel } from '../../models/product.js';
import { queueName } from '../../../jobs/queues.js';
import { closeRedis, createRedis } from '../../db/redis.js';
import { validate } from '../validate.js';
import { HttpError } from '../../errors/index.js';
import { MAX_ITEMS_PER_CALL } from '../../upstream/port.js';

/** `asin`: 1–10 ASINs separated by commas; duplicates count once. */
const asinList = z.string({ error: 'must be a list of ASINs separated by commas.' })
  .transform((v) => v.split(',').map((a) => a.trim().toUpperCase()).filter(Boolean))
  .refine((list) => list.length > 0, 'is required.')
  .refine((list) => list.every((a) => ASIN_RE.test(a)), 'must hold only ASINs of 10 letters or digits.')
  .transform((list) => [...new Set(list)])
  .refine((list) => list.length <= MAX_ITEMS_PER_CALL, `must not hold more than ${MAX_ITEMS_PER_CALL} ASINs (the upstream's limit).`);

type Outcome = { kind: 'done' } | { kind: 'failed'; reason: string } | { kind: 'pending' };

/**
 * Waits for the job up to `ms`. Our own timer decides "still pending" (BullMQ's ttl error is only
 * told apart by its message); BullMQ's ttl, a little longer, only guarantees the listener goes.
 */
async function waitFor(job: Job, events: QueueEvents, ms: number): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'pending' }), ms);
  });
  const finished = job.waitUntilFinished(events, ms + 1_000).then(
    (): Outcome => ({ kind: 'done' }),
    (err: Error): Outcome => ({ kind: 'failed', reason: err.message.replace(/^\w+Error: /, '') }),
  );
  try {
    return await Promise.race([finished, pending]);
  } finally {
    clearTimeout(timer);
  }
}

/** A forced update gives up sooner than a scheduled refresh: a client is waiting for it. */
const FORCED_ATTEMPTS = 3;

/** GET reads the query; POST its body (and the query). A JSON body may give `asin` as an array. */
function inputOf(req: Request): Record<string, unknown> {
  const body = req.method === 'POST' && req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? { ...(req.body as Record<string, unknown>) } : {};
  if (Array.isArray(body.asin) && body.asin.length <= MAX_ITEMS_PER_CALL * 2 && body.asin.every((a) => typeof a === 'string')) body.asin = body.asin.join(',');
  return { ...req.query, ...body };
}

/**
 * `GET|POST /api/world/update`: refreshes up to 10 ASINs of one country now. The job goes to the
 * front of that country's queue, so it spends the same quota as everything else and never exceeds
 * it; the request waits for it (QueueEvents) and answers the fresh records, or 202 with the job id
 * when the wait runs out (the job stays and finishes later).
 */
export function worldUpdateRoutes(ctx: AppContext): Router {
  const router = Router();
  const fallback: Country = ctx.config.countries.includes('JP') ? 'JP' : ctx.config.countries[0]!;
  const schema = z.object({ asin: asinList, country: oneCountryParam(ctx.config.countries, fallback) });
  const events = new Map<Country, QueueEvents>();

  // Each QueueEvents holds a blocking connection of its own, opened on first use.
  const eventsOf = async (country: Country): Promise<QueueEvents> => {
    let qe = events.get(country);
    if (!qe) {
      const connection = ctx.resources.own(`Redis (queue events ${country})`, createRedis(ctx.redisUrl, 'blocking', ctx.logger, `events-${country}`), closeRedis);
      qe = ctx.resources.own(`queue events ${country}`, new QueueEvents(queueName(country), { connection, prefix: ctx.redisPrefix }), (q) => q.close());
      qe.on('error', (err) => ctx.logger.warn({ err: { message: err.message }, country }, 'queue events error'));
      events.set(country, qe);
      await qe.waitUntilReady();
    }
    return qe;
  };

  router.all('/api/world/update', async (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'POST') return next();
    const { asin: asins, country } = validate(schema, inputOf(req));
    const qe = await eventsOf(country);
    // The job lives in Redis only. Pull the products' next refresh forward to a lease from now (never
    // back): if Redis loses the job, the planner refreshes them when the lease ends, as it does for
    // its own lost jobs; until then it leaves them to this job. ($min keeps an earlier due time, and
    // leaves unscheduled products, whose next refresh is null, unscheduled.)
    const leaseEnd = new Date(Date.now() + ctx.config.workers.scheduler.leaseMs);
    await productModel(ctx.mongo).updateMany({ country, asin: mongoose.trusted({ $in: asins }) }, { $min: { next_refresh_at: leaseEnd } });
    const jobId = await ctx.jobs.add('world.update', { country, asins }, { attempts: FORCED_ATTEMPTS });
    const job = (await ctx.jobs.queue(country).getJob(jobId)) as Job | undefined;
    const outcome = job ? await waitFor(job, qe, ctx.config.workers.updateWaitMs) : { kind: 'pending' as const };
    if (outcome.kind === 'pending') {
      res.status(202).json({ message: 'The update is queued and will finish later.', job: { id: jobId, country, asins } });
      return;
    }
    if (outcome.kind === 'failed') throw new HttpError(502, `The upstream could not refresh the products: ${outcome.reason}`);
    const found = await productModel(ctx.mongo).find({ country, asin: mongoose.trusted({ $in: asins }) }).select(PRODUCT_HIDDEN_FIELDS).lean();
    const byAsin = new Map(found.map((p) => [p.asin, p]));
    res.json({ data: asins.flatMap((a) => (byAsin.has(a) ? [presentProduct(byAsin.get(a)!, ctx.config.timeZone)] : [])) });
  });
  return router;
}
