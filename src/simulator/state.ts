import type { Response } from 'express';
import type { SimulatorConfig } from '../../config/upstream.js';
import type { Logger } from '../logger.js';
import type { SyntheticCatalog } from './catalog.js';
import type { FaultInjector } from './faults.js';
import type { QuotaKeeper } from './quota.js';
import type { SimulatorStats } from './stats.js';
import type { TokenIssuer } from './tokens.js';

/** Everything one simulator instance keeps: no per-ASIN state, only counters, faults and a key. */
export interface SimulatorState {
  readonly config: SimulatorConfig;
  readonly logger: Logger;
  readonly now: () => number;
  /**
   * The clock calls are judged by when they arrive (epoch ms): `now` to the microsecond. Whole
   * milliseconds would read two calls 1,000.3 ms apart as 999 ms apart a third of the time.
   */
  readonly arrivalNow: () => number;
  readonly catalog: SyntheticCatalog;
  readonly tokens: TokenIssuer;
  readonly quota: QuotaKeeper;
  readonly faults: FaultInjector;
  readonly stats: SimulatorStats;
  /** Requests held unanswered by the timeout fault; released (destroyed) on close. */
  readonly held: Set<Response>;
}
