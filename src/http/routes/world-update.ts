import { Router, type Request, type RequestHandler } from 'express';
import { QueueEvents, type Job } from 'bullmq';
import mongoose from 'mongoose';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { ASIN_RE, countrySchema, type Country } from '../../catalog/identifiers.js';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { Config } from '../../../config/env.js';
import { errors, limited, AREA_B_SECURITY, bodyToken } from '../openapi/responses.js';
import { productListSchema } from './world.js';
import { oneCountryParam } from '../../catalog/world-query.js';
import { PRODUCT_HIDDEN_FIELDS, presentProduct } from '../../catalog/present.js';
import { productModel } from '../../models/product.js';
import { queueName } from '../../../jobs/queues.js';
import { closeRedis, createRedis } from '../../db/redis.js';
import { validate } from '../validate.js';
import { HttpError } from '../../errors/index.js';
import { MAX_ITEMS_PER_CALL } from '../../upstream/port.js';
import { userOf } from '../auth.js';
import { assertForcedUpdateTaken, takeForcedUpdate } from '../../accounts/limits.js';
import { quotaDayOf } from '../../quota/quota-day.js';
import { randomUUID } from 'node:crypto';

/** `asin`: 1–10 ASINs separated by commas; duplicates count once. */
const asinList = z.string({ error: 'must be a list of ASINs separated by commas.' })
  .transform((v) => v.split(',').map((a) => a.trim().toUpperCase()).filter(Boolean))
  .refine((list) => list.length > 0, 'is required.')
  .refine((list) => list.every((a) => ASIN_RE.test(a)), 'must hold only ASINs of 10 letters or digits.')
  .transform((list) => [...new Set(list)])
  .refine((list) => list.length <= MAX_ITEMS_PER_CALL, `must not hold more than ${MAX_ITEMS_PER_CALL} ASINs (the upstream's limit).`)
  .meta({ description: `1 to ${MAX_ITEMS_PER_CALL} ASINs separated by commas; duplicates count once.`, example: 'B00TEST001,B00TEST002', override: { type: 'string' } });

/** `asin` and `country`, from the query (GET) or the body and the query (POST). */
function updateInput(config: Pick<Config, 'countries'>) {
  const fallback: Country = config.countries.includes('JP') ? 'JP' : config.countries[0]!;
  return z.object({ asin: asinList, country: oneCountryParam(config.countries, fallback) });
}

const queuedAnswer = z
  .object({ message: z.string(), job: z.object({ id: z.string(), country: countrySchema, asins: z.array(z.string()) }) })
  .meta({ id: 'UpdateQueued' });

export function worldUpdatePaths(config: Pick<Config, 'countries'>): ZodOpenApiPathsObject {
  const input = updateInput(config);
  // A JSON body may give the ASINs as an array as well.
  const asinInBody = asinList.meta({
    override: ({ jsonSchema }) => {
      delete jsonSchema.type;
      jsonSchema.anyOf = [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: MAX_ITEMS_PER_CALL }];
    },
  });
  const responses = {
    200: limited('The refreshed records, one per ASIN the upstream knows.', productListSchema),
    202: limited(`Still running after UPDATE_WAIT; the job finishes later.`, queuedAnswer),
    ...errors(401, 413, 422, 429, 502),
  };
  const operation = (method: 'get' | 'post') => ({
    tags: ['Area B: world catalogue'],
    security: AREA_B_SECURITY,
    operationId: method === 'get' ? 'forceUpdate' : 'forceUpdatePost',
    summary: `Refresh up to ${MAX_ITEMS_PER_CALL} ASINs of one country now (spends the upstream quota)`,
    responses,
  });
  const body = input.extend({ asin: asinInBody, ...bodyToken });
  return {
    '/api/world/update': {
      get: { ...operation('get'), requestParams: { query: input } },
      post: {
        ...operation('post'),
        requestBody: { required: true, content: { 'application/json': { schema: body }, 'application/x-www-form-urlencoded': { schema: body } } },
      },
    },
  };
}

type Outcome = { kind: 'done' } | { kind: 'failed'; reason: string; quotaDay: boolean } | { kind: 'pending' };

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
    (err: Error): Outcome => ({ kind: 'failed', reason: err.message.replace(/^\w+Error: /, ''), quotaDay: err.message.startsWith('DayQuotaSpentError') }),
  );
  try {
    return await Promise.race([finished, pending]);
  } finally {
    clearTimeout(timer);
  }
}

/** GET reads the query; POST its body (and the query). A JSON body may give `asin` as an array. */
function inputOf(req: Request): Record<string, unknown> {
  const body = req.method === 'POST' && req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? { ...(req.body as Record<string, unknown>) } : {};
  if (Array.isArray(body.asin) && body.asin.length <= MAX_ITEMS_PER_CALL * 2 && body.asin.every((a) => typeof a === 'string')) body.asin = body.asin.join(',');
  return { ...req.query, ...body };
}

/** The 429 of a country whose quota day has no call left for forced updates. */
function quotaSpent(country: Country, resetAt: number, share: boolean): HttpError {
  const why = share ? 'the share of today\'s upstream quota kept for on-demand work (ON_DEMAND_SHARE)' : 'today\'s upstream quota (QUOTA_PER_DAY)';
  return new HttpError(429, `No forced update in ${country} until the quota renews: ${why} is spent.`, { 'Retry-After': String(Math.max(1, Math.ceil((resetAt - Date.now()) / 1_000))) });
}

/**
 * `GET|POST /api/world/update`: refreshes up to 10 ASINs of one country now. The job goes to the
 * country's forced-update queue, whose calls take the quota governor's permits ahead of every
 * scheduled call (within the on-demand share), so it spends the same quota as everything else and
 * never exceeds it; the request waits for it (QueueEvents) and answers the fresh records, or 202
 * with the job id when the wait runs out (the job stays and finishes later). The same ASINs asked
 * again while their job is pending join that job instead of spending another call.
 */
export function worldUpdateRoutes(ctx: AppContext): Router {
  const router = Router();
  const schema = updateInput(ctx.config);
  const events = new Map<Country, QueueEvents>();

  // Each QueueEvents holds a blocking connection of its own, opened on first use.
  const eventsOf = async (country: Country): Promise<QueueEvents> => {
    let qe = events.get(country);
    if (!qe) {
      const connection = ctx.resources.own(`Redis (queue events ${country})`, createRedis(ctx.redisUrl, 'blocking', ctx.logger, `events-${country}`), closeRedis);
      qe = ctx.resources.own(`queue events ${country}`, new QueueEvents(queueName(country, 'update'), { connection, prefix: ctx.redisPrefix }), (q) => q.close());
      qe.on('error', (err) => ctx.logger.warn({ err: { message: err.message }, country }, 'queue events error'));
      events.set(country, qe);
      await qe.waitUntilReady();
    }
    return qe;
  };

  const forceUpdate: RequestHandler = async (req, res) => {
    const { asin: asins, country } = validate(schema, inputOf(req));
    const qe = await eventsOf(country);
    const day = await ctx.quota.day(country);
    if (day.spent || day.used >= day.limit) throw quotaSpent(country, day.day.end, false);
    if (day.onDemandUsed >= day.onDemandLimit) throw quotaSpent(country, day.day.end, true);
    // The account's own daily cap, counted per quota day so it renews with the quota.
    const taken = await takeForcedUpdate(ctx.redis, ctx.redisPrefix, userOf(res)._id.toHexString(), day.day.key, ctx.config.accounts.maxUpdatesPerDay);
    assertForcedUpdateTaken(taken, (day.day.end - Date.now()) / 1_000);
    // The job lives in Redis only. The products' claim moves to this update, so a planned batch
    // still queued with them skips them (one call per product, not two), and their next refresh moves
    // to a lease from now: if Redis loses the job, the planner refreshes them when the lease ends.
    // Products nobody watches (next refresh null) stay off the schedule.
    const leaseEnd = new Date(Date.now() + ctx.config.workers.scheduler.leaseMs);
    const claim = `update-${randomUUID()}`;
    await productModel(ctx.mongo).updateMany(
      { country, asin: mongoose.trusted({ $in: asins }), next_refresh_at: mongoose.trusted({ $ne: null }) },
      { $set: { next_refresh_at: leaseEnd, plan_token: claim } },
    );
    const dedupe = `update-${country}-${[...asins].sort().join(',')}`;
    const jobId = await ctx.jobs.add('world.update', { country, asins, claim }, { deduplication: { id: dedupe } });
    const job = (await ctx.jobs.queue(country, 'update').getJob(jobId)) as Job | undefined;
    const outcome = job ? await waitFor(job, qe, ctx.config.workers.updateWaitMs) : { kind: 'pending' as const };
    if (outcome.kind === 'pending') {
      res.status(202).json({ message: 'The update is queued and will finish later.', job: { id: jobId, country, asins } });
      return;
    }
    if (outcome.kind === 'failed' && outcome.quotaDay) throw quotaSpent(country, quotaDayOf(Date.now(), ctx.config.workers.quotaDayTimeZone).end, outcome.reason.includes('share'));
    if (outcome.kind === 'failed') throw new HttpError(502, `The upstream could not refresh the products: ${outcome.reason}`);
    const found = await productModel(ctx.mongo).find({ country, asin: mongoose.trusted({ $in: asins }) }).select(PRODUCT_HIDDEN_FIELDS).lean();
    const byAsin = new Map(found.map((p) => [p.asin, p]));
    res.json({ data: asins.flatMap((a) => (byAsin.has(a) ? [presentProduct(byAsin.get(a)!, ctx.config.timeZone)] : [])) });
  };
  // Express answers HEAD with the GET handler, which here would spend upstream quota: HEAD is not found.
  router.head('/api/world/update', (_req, _res, next) => next('route'));
  router.get('/api/world/update', forceUpdate);
  router.post('/api/world/update', forceUpdate);
  return router;
}
