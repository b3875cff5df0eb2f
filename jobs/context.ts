import type { Connection } from 'mongoose';
import type { Redis } from '../src/db/redis.js';
import type { RefreshPolicies } from '../src/scheduling/policy-store.js';
import type { Config } from '../config/env.js';
import type { Logger } from '../src/logger.js';
import type { Metrics } from '../src/core/metrics.js';
import type { QuotaGovernor } from '../src/quota/governor.js';
import type { UpstreamPort } from '../src/upstream/port.js';
import type { WatchService } from '../src/watch/service.js';
import type { CrawlQueue } from '../src/scheduling/crawls.js';
import type { RefreshQueues } from '../src/scheduling/planner.js';
import type { EanResolveQueue } from '../src/watch/ean-imports.js';
import type { Country } from '../src/core/identifiers.js';
import type { AccountRef } from '../src/fairness/fair-classes.js';
import type { Deliveries } from '../src/alerts/deliveries/service.js';
import type { FairTags } from '../src/fairness/fair-tags.js';
import type { AccountWeights } from '../src/accounts/weights.js';

/** What a running job queues after itself: a crawl's next page (the job producer, jobs/queues.ts). */
export interface NextPageQueue {
  add(
    name: 'browse.crawl',
    data: { country: Country; nodeId: string; page: number; found: number; crawlId: string },
    opts: { jobId: string },
    account: AccountRef | undefined,
  ): Promise<string>;
}

/**
 * What jobs, their producers and the planner use of the application's context. The context is
 * built once at start-up (src/app/context.ts) and is this and more; nothing builds a second one.
 */
export interface JobContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly mongo: Connection;
  /** Fail-fast commands (the planner's credit, nudges, locks). */
  readonly redis: Redis;
  readonly redisPrefix: string;
  /** Where jobs go, as the domain's ports name it (the job producer, jobs/queues.ts, is every one). */
  readonly jobs: NextPageQueue & CrawlQueue & RefreshQueues & EanResolveQueue;
  readonly quota: QuotaGovernor;
  readonly metrics: Metrics;
  readonly watches: WatchService;
  /** Where a batch's changes become alert deliveries. */
  readonly deliveries: Deliveries;
  /** Start tags of fair queuing between accounts (src/fairness/fair-tags.ts). */
  readonly fair: FairTags;
  /** Each account's weight in that fair sharing. */
  readonly weights: AccountWeights;
  /** The countries' tuned refresh policies: a refresh sets priority 0's next refresh from them. */
  readonly policies: RefreshPolicies;
}

/** What one run of a job has besides the context: who it is, and its country's upstream. */
export interface JobRun {
  readonly id: string | undefined;
  /** The job's country's upstream; each request takes a permit in the lane and priority of the kind. */
  readonly upstream: UpstreamPort;
  readonly log: Logger;
}
