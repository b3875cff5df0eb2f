import type { z } from 'zod';
import type { Country } from '../core/identifiers.js';
// The schema is in config/ because SIMULATOR_FAULTS is parsed with it there.
import { faultsSchema, type Faults } from '../../config/faults.js';

export const faultsPatchSchema = faultsSchema.partial();
export type FaultsPatch = z.infer<typeof faultsPatchSchema>;

export const NO_FAULTS: Faults = Object.freeze(faultsSchema.parse({}));

export type FaultDecision = 'invalid_token' | 'not_eligible' | 'refused' | 'throttle' | 'timeout' | 'error';

/** Holds the current faults and draws, per call, which one (if any) applies. */
export class FaultInjector {
  #faults: Faults;

  constructor(
    initial: Faults = NO_FAULTS,
    private readonly random: () => number = Math.random,
  ) {
    this.#faults = { ...initial, notEligible: [...initial.notEligible], refused: [...initial.refused] };
  }

  get current(): Faults {
    return { ...this.#faults, notEligible: [...this.#faults.notEligible], refused: [...this.#faults.refused] };
  }

  /** Merges what is given; what is not given keeps its value. */
  update(patch: FaultsPatch): Faults {
    this.#faults = faultsSchema.parse({ ...this.#faults, ...patch });
    return this.current;
  }

  reset(): Faults {
    this.#faults = { ...NO_FAULTS, notEligible: [], refused: [] };
    return this.current;
  }

  /**
   * Faults that the real service would raise before looking at the quota (auth, eligibility, an
   * account it throttles whatever the pace): a refused call spends none of the bucket.
   */
  beforeQuota(country: Country): FaultDecision | undefined {
    const f = this.#faults;
    if (f.invalidTokenRate > 0 && this.random() < f.invalidTokenRate) return 'invalid_token';
    if (f.notEligible.includes(country)) return 'not_eligible';
    if (f.throttleAll || f.refused.includes(country)) return 'refused';
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
