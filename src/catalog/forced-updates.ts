import { randomUUID } from 'node:crypto';
import mongoose, { type Connection, type Types } from 'mongoose';
import type { Config } from '../../config/env.js';
import type { Country } from '../core/identifiers.js';
import { PRODUCT_SHOWN_FIELDS, type ShownProduct } from './present.js';
import { assertForcedUpdateTaken, takeForcedUpdate } from '../accounts/limits.js';
import type { AccountWeights } from '../accounts/weights.js';
import type { Redis } from '../db/redis.js';
import { ServiceUnavailableError, TooManyRequestsError, UpstreamFailedError } from '../core/errors.js';
import { untilProbeMs } from '../quota/breaker-keys.js';
import type { AccountRef } from '../fairness/fair-classes.js';
import type { Logger } from '../logger.js';
import { productModel } from '../models/product.js';
import type { QuotaGovernor } from '../quota/governor.js';
import { nextRefreshAt } from '../scheduling/change-rate.js';

/** How the job ended, as the waiting request reads it (BullMQ keeps it as the job's return value). */
export type UpdateOutcome =
  | { status: 'refreshed' }
  | { status: 'day_spent'; share: boolean; retryAt: number }
  | { status: 'refused'; reason: string; retryAt: number };

/** A forced update's job, queued: its id, and how to wait for its end. */
export interface QueuedUpdate {
  readonly id: string;
  /** The job's return value once it completes; rejects with why it failed, or when `ms` pass first. */
  finished(ms: number): Promise<unknown>;
}

/**
 * Where a forced update's job goes, and where its end is heard: the country's forced-update queue
 * (jobs/forced-update-queue.ts).
 */
export interface ForcedUpdateQueue {
  /** Listens to the country's queue, opened on first use: a job added once this resolves is heard when it ends. */
  listen(country: Country): Promise<void>;
  add(data: { country: Country; asins: string[]; claim: string }, dedupe: string, account: AccountRef): Promise<QueuedUpdate>;
}

export type ForcedUpdateAnswer =
  { kind: 'refreshed'; products: ShownProduct[] } | { kind: 'queued'; job: { id: string; country: Country; asins: string[] } };

/** The 429 of a country whose quota day has no call left for forced updates. */
function daySpent(country: Country, resetAt: number, share: boolean): TooManyRequestsError {
  const why = share
    ? "the share of today's upstream quota kept for forced updates (FORCED_SHARE)"
    : "today's upstream quota (QUOTA_PER_DAY)";
  return new TooManyRequestsError(
    `No forced update in ${country} until the quota renews: ${why} is spent.`,
    (resetAt - Date.now()) / 1_000,
  );
}

/** The 503 of a country the upstream refuses (its breaker is open), with when the next probe goes. */
function refusing(country: Country, reason: string, probeAt: number): ServiceUnavailableError {
  const seconds = Math.ceil(untilProbeMs(probeAt) / 1_000);
  return new ServiceUnavailableError(
    `The upstream is refusing ${country} (${reason}): no update can run there until it serves the country again. ` +
      `The next try is in about ${seconds} s.`,
    seconds,
  );
}

type Waited = { kind: 'done'; outcome: UpdateOutcome } | { kind: 'failed'; reason: string } | { kind: 'pending' };

export interface ForcedUpdatesDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly mongo: Connection;
  /** Fail-fast commands: the account's daily cap. */
  readonly redis: Redis;
  readonly redisPrefix: string;
  /** The quota governor: whether the upstream refuses the country (503 at once), and the day's count. */
  readonly quota: Pick<QuotaGovernor, 'admission'>;
  readonly weights: AccountWeights;
  readonly jobs: ForcedUpdateQueue;
  /** Aborted when the process begins to shut down: waiting requests are answered at once. */
  readonly stopping: AbortSignal;
}

/**
 * Runs a forced update for a request: checks the day and the account's cap, moves the products'
 * claim to this update, enqueues the job and waits for it up to UPDATE_WAIT or until
 * shutdown begins; then answers the fresh records, or that the job is queued and finishes later.
 */
export class ForcedUpdates {
  constructor(private readonly ctx: ForcedUpdatesDeps) {}

  async request(userId: Types.ObjectId, country: Country, asins: string[]): Promise<ForcedUpdateAnswer> {
    const { ctx } = this;
    // Nothing of the country reaches the upstream while it refuses the country: no call, no
    // job, no wait for a permit that would come to nothing.
    const [{ refused, day }] = await Promise.all([ctx.quota.admission(country), ctx.jobs.listen(country)]);
    if (refused) throw refusing(country, refused.reason, refused.probeAt);
    if (day.spent || day.used >= day.limit) throw daySpent(country, day.day.end, false);
    if (day.forcedUsed >= day.forcedLimit) throw daySpent(country, day.day.end, true);
    // The account's own daily cap, counted per quota day so it renews with the quota.
    const taken = await takeForcedUpdate(
      ctx.redis,
      ctx.redisPrefix,
      userId.toHexString(),
      day.day.key,
      ctx.config.accounts.maxUpdatesPerDay,
    );
    assertForcedUpdateTaken(taken, (day.day.end - Date.now()) / 1_000);
    // The job lives in Redis only. The products' claim moves to this update, so a planned batch
    // still queued with them skips them (one call per product, not two), and their next refresh moves
    // to a lease from now: if Redis loses the job, the planner refreshes them when the lease ends.
    // Products nobody watches (next refresh null) stay off the schedule. The claim and the job are
    // written at once; a product the job refreshed first (its last attempt is after this request
    // came) keeps what the refresh wrote.
    const claim = `forced-${randomUUID()}`;
    const asked = new Date();
    const claimed = productModel(ctx.mongo).updateMany(
      {
        country,
        asin: mongoose.trusted({ $in: asins }),
        next_refresh_at: mongoose.trusted({ $ne: null }),
        last_attempt_at: mongoose.trusted({ $not: { $gte: asked } }),
      },
      {
        $set: {
          next_refresh_at: nextRefreshAt({ why: 'claimed', until: new Date(asked.getTime() + ctx.config.workers.scheduler.leaseMs) }),
          plan_token: claim,
        },
      },
    );
    // The same ASINs asked again while their job is pending join it instead of spending another call.
    const dedupe = `forced-${country}-${[...asins].sort().join(',')}`;
    // Each account's forced updates take their fair share of the country's queue, whatever another account has queued.
    const account = { id: userId.toHexString(), weight: await ctx.weights.of(userId.toHexString()) };
    const added = ctx.jobs.add({ country, asins, claim }, dedupe, account);
    const [job] = await Promise.all([added, claimed]);
    const jobId = job.id;
    const waited = await this.wait(job);
    if (waited.kind === 'pending') return { kind: 'queued', job: { id: jobId, country, asins } };
    if (waited.kind === 'failed') throw new UpstreamFailedError(waited.reason);
    if (waited.outcome.status === 'day_spent') throw daySpent(country, waited.outcome.retryAt, waited.outcome.share);
    if (waited.outcome.status === 'refused') throw refusing(country, waited.outcome.reason, waited.outcome.retryAt);
    const found = await productModel(ctx.mongo)
      .find({ country, asin: mongoose.trusted({ $in: asins }) })
      .select(PRODUCT_SHOWN_FIELDS)
      .lean();
    const byAsin = new Map(found.map((p) => [p.asin, p]));
    return { kind: 'refreshed', products: asins.flatMap((a) => byAsin.get(a) ?? []) };
  }

  /**
   * Waits for the job up to UPDATE_WAIT. Our own timer decides "still pending" (the queue's own
   * timeout is only told apart by its message); that timeout, a little longer, only makes sure its
   * listener goes. Shutdown ends every wait at once: the job stays queued and finishes later.
   */
  private async wait(job: QueuedUpdate): Promise<Waited> {
    const ms = this.ctx.config.workers.updateWaitMs;
    const { stopping } = this.ctx;
    let timer: NodeJS.Timeout | undefined;
    let onStop: (() => void) | undefined;
    const pending = new Promise<Waited>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'pending' }), ms);
      onStop = () => resolve({ kind: 'pending' });
      if (stopping.aborted) onStop();
      else stopping.addEventListener('abort', onStop, { once: true });
    });
    const finished = job.finished(ms + 1_000).then(
      (value: unknown): Waited => ({ kind: 'done', outcome: (value as UpdateOutcome | null) ?? { status: 'refreshed' } }),
      (err: Error): Waited => ({ kind: 'failed', reason: err.message }),
    );
    try {
      return await Promise.race([finished, pending]);
    } finally {
      clearTimeout(timer);
      if (onStop) stopping.removeEventListener('abort', onStop);
    }
  }
}
