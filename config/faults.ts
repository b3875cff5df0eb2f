import { z } from 'zod';
import { countrySchema } from './countries.js';

const rate = z.number().min(0).max(1);

/**
 * Faults the simulator can be told to inject (SIMULATOR_FAULTS at start, POST /__faults at run
 * time), so the client and the queues above it can be exercised against every failure they must
 * survive. Rates are probabilities per catalog call.
 */
export const faultsSchema = z.strictObject({
  /** Added before every catalog answer. */
  latencyMs: z.number().int().min(0).max(120_000).default(0),
  /** 500 InternalServerException. */
  errorRate: rate.default(0),
  /** No answer at all: the request is held until the client gives up (or the server closes). */
  timeoutRate: rate.default(0),
  /** 429 ThrottleException on top of the quota. */
  throttleRate: rate.default(0),
  /** The next N catalog calls answer 429 whatever the quota says (counts down). */
  throttleBurst: z.number().int().min(0).max(1_000_000).default(0),
  /** 401 InvalidToken although the token is good (a revoked credential). */
  invalidTokenRate: rate.default(0),
  /** Countries whose account lost eligibility: 403 AccessDenied / AssociateNotEligible. */
  notEligible: z.array(countrySchema).default([]),
  /**
   * The account is throttled everywhere (fresh keys, no qualifying sales): every catalog call of
   * every country answers 429 naming no quota, which no pace fixes.
   */
  throttleAll: z.boolean().default(false),
  /** Countries whose marketplace the account may not use: their calls answer that same 429. */
  refused: z.array(countrySchema).default([]),
});
export type Faults = z.infer<typeof faultsSchema>;
