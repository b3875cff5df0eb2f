import { z } from 'zod';
import { countrySchema, type Country } from '../catalog/identifiers.js';

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
});
export type Faults = z.infer<typeof faultsSchema>;
export const faultsPatchSchema = faultsSchema.partial();
export type FaultsPatch = z.infer<typeof faultsPatchSchema>;

export const NO_FAULTS: Faults = Object.freeze(faultsSchema.parse({}));

export type FaultDecision = 'invalid_token' | 'not_eligible' | 'throttle' | 'timeout' | 'error';

/** Holds the current faults and draws, per call, which one (if any) applies. */
export class FaultInjector {
  #faults: Faults;

  constructor(initial: Faults = NO_FAULTS, private readonly random: () => number = Math.random) {
    this.#faults = { ...initial, notEligible: [...initial.notEligible] };
  }

  get current(): Faults {
    return { ...this.#faults, notEligible: [...this.#faults.notEligible] };
  }

  /** Merges what is given; what is not given keeps its value. */
  update(patch: FaultsPatch): Faults {
    this.#faults = faultsSchema.parse({ ...this.#faults, ...patch });
    return this.current;
  }

  reset(): Faults {
    this.#faults = { ...NO_FAULTS, notEligible: [] };
    return this.current;
  }

  /** Faults that the real service would raise before looking at the quota (auth, eligibility). */
  beforeQuota(country: Country): FaultDecision | undefined {
    const f = this.#faults;
    if (f.invalidTokenRate > 0 && this.random() < f.invalidTokenRate) return 'invalid_token';
    if (f.notEligible.includes(country)) return 'not_eligible';
    return undefined;
  }

  /** Faults of a call that passed the quota: throttling bursts, hangs and server errors. */
  afterQuota(): FaultDecision | undefined {
    const f = this.#faults;
    if (f.throttleBurst > 0) {
      this.#faults = { ...f, throttleBurst: f.throttleBurst - 1 };
      return 'throttle';
    }
    if (f.throttleRate > 0 && this.random() < f.throttleRate) return 'throttle';
    if (f.timeoutRate > 0 && this.random() < f.timeoutRate) return 'timeout';
    if (f.errorRate > 0 && this.random() < f.errorRate) return 'error';
    return undefined;
  }
}
