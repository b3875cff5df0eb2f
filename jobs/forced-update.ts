import { z } from 'zod';
import { countrySchema } from '../src/core/identifiers.js';
import { DayQuotaSpentError, UpstreamRefusingError } from '../src/core/errors.js';
import { asinBatchSchema } from '../src/upstream/port.js';
import { defineJob } from './kind.js';
import { refreshBatch } from './refresh.js';
import { FORCED_RETRY } from '../config/retry.js';
import { fairSchema } from '../src/fairness/fair-classes.js';
import type { UpdateOutcome } from '../src/catalog/forced-updates.js';

/**
 * The forced update's job (`GET|POST /api/world/update`, src/catalog/forced-updates.ts): up to 10
 * ASINs of one country refreshed now. Its jobs have a queue of their own per country, so they never wait for a worker slot behind a
 * backlog of refreshes, and their calls take the quota governor's permits ahead of every scheduled
 * call, within the forced-update share: a forced update spends the same quota as everything else and
 * never exceeds it.
 */

const updatePayload = z.object({
  country: countrySchema,
  asins: asinBatchSchema,
  claim: z.string().max(64).optional(),
  fair: fairSchema.optional(),
});

export const forcedUpdateJob = defineJob({
  name: 'forced.update',
  payload: updatePayload,
  cls: 'forced',
  priority: 1,
  retry: FORCED_RETRY,
  async run(ctx, data, run): Promise<UpdateOutcome> {
    try {
      await refreshBatch(ctx, data, run, 'forced');
      return { status: 'refreshed' };
    } catch (err) {
      // A client waits: it is told the day is spent (429 with when it renews), nothing waits in Redis.
      if (err instanceof DayQuotaSpentError) return { status: 'day_spent', share: err.reason === 'share', retryAt: err.retryAt };
      // Likewise when the upstream refuses the country (503 with when the next probe goes); the
      // products keep their place in the schedule (their claim's lease), so nothing is lost.
      if (err instanceof UpstreamRefusingError) return { status: 'refused', reason: err.reason, retryAt: Date.now() + err.retryAfterMs };
      throw err;
    }
  },
  whenDaySpent: 'fail',
});
