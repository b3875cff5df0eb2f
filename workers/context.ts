import type { Connection } from 'mongoose';
import type { Config } from '../config/env.js';
import type { WorkersConfig } from '../config/workers.js';
import type { JobProducer } from '../jobs/queues.js';
import type { Country } from '../src/catalog/identifiers.js';
import type { Logger } from '../src/logger.js';
import type { UpstreamPort } from '../src/upstream/port.js';
import type { QuotaGovernor } from '../src/quota/governor.js';
import type { JobName } from '../jobs/registry.js';
import type { Metrics } from '../src/metrics/registry.js';

/** What a job handler may use: the database, the upstream of its country, and the queues. */
export interface JobContext {
  readonly mongo: Connection;
  readonly config: Pick<Config, 'countries' | 'refresh' | 'timeZone' | 'accounts'>;
  readonly workers: WorkersConfig;
  readonly jobs: JobProducer;
  /** The country's upstream, each request taking its permit in the lane and priority of the job kind. */
  readonly upstream: (country: Country, job: JobName) => UpstreamPort;
  readonly quota: QuotaGovernor;
  readonly metrics: Metrics;
  readonly logger: Logger;
}
