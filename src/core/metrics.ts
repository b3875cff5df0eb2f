import { Counter, Gauge, Histogram, Registry, Summary, collectDefaultMetrics } from 'prom-client';

/**
 * Every metric of a process, on a registry of its own (never prom-client's global one), so that
 * tests and several roles in one process do not collide. Gauges that describe shared state (queue
 * depths, products due) are refreshed by collectors that the api and the scheduler register.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly jobs = new Counter({
    name: 'shelfwatch_jobs_total',
    help: 'Jobs finished by this process, by country, job name and outcome (completed, failed, retry, rate_limited)',
    labelNames: ['country', 'name', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly upstreamCalls = new Counter({
    name: 'shelfwatch_upstream_calls_total',
    help: 'Upstream calls, by country, operation and result (ok, throttled, not_eligible, config, auth, invalid, unavailable)',
    labelNames: ['country', 'operation', 'result'] as const,
    registers: [this.registry],
  });

  readonly upstreamDropped = new Counter({
    name: 'shelfwatch_upstream_dropped_total',
    help: 'Members of upstream answers left out because they could not be read, by country, operation, member (item, listing, browse_node, error, field) and reason (missing_id, malformed)',
    labelNames: ['country', 'operation', 'member', 'reason'] as const,
    registers: [this.registry],
  });

  readonly priceCharts = new Counter({
    name: 'shelfwatch_price_charts_total',
    help: 'Price charts this process answered (GET /api/world/asin/{asin}/history.svg), by country and outcome: rendered, or cached (the same product, window and last point drawn before)',
    labelNames: ['country', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly upstreamItems = new Counter({
    name: 'shelfwatch_upstream_items_total',
    help: 'Items asked of the upstream, by country and outcome (found, not_found, not_accessible)',
    labelNames: ['country', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly upstreamLatency = new Histogram({
    name: 'shelfwatch_upstream_latency_seconds',
    help: 'Upstream call latency',
    labelNames: ['country', 'operation'] as const,
    buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly refreshLag = new Summary({
    name: 'shelfwatch_refresh_lag_seconds',
    help: 'How late products were refreshed (now minus their due time), by country and priority',
    labelNames: ['country', 'priority'] as const,
    percentiles: [0.5, 0.9, 0.99],
    maxAgeSeconds: 600,
    ageBuckets: 5,
    registers: [this.registry],
  });

  readonly queueJobs = new Gauge({
    name: 'shelfwatch_queue_jobs',
    help: 'Jobs in each country queue (update: forced updates; import: EAN pages; refresh: planned refreshes; crawl: browse pages), by state',
    labelNames: ['country', 'queue', 'state'] as const,
    registers: [this.registry],
  });

  readonly queueLag = new Gauge({
    name: 'shelfwatch_queue_oldest_waiting_seconds',
    help: 'Age of the oldest job waiting in each country queue',
    labelNames: ['country', 'queue'] as const,
    registers: [this.registry],
  });

  readonly productsDue = new Gauge({
    name: 'shelfwatch_products_due',
    help: 'Products due for refresh but not yet enqueued (the backlog kept in MongoDB) at the last plan, counted up to one more than a planning step takes (1,001 at most)',
    labelNames: ['country', 'priority'] as const,
    registers: [this.registry],
  });

  readonly planned = new Counter({
    name: 'shelfwatch_planned_products_total',
    help: 'Products the scheduler enqueued for refresh, by country and priority',
    labelNames: ['country', 'priority'] as const,
    registers: [this.registry],
  });

  readonly mongoCommands = new Counter({
    name: 'shelfwatch_mongo_commands_total',
    help: 'MongoDB commands this process sent (round trips)',
    registers: [this.registry],
  });

  readonly cacheReads = new Counter({
    name: 'shelfwatch_cache_reads_total',
    help: 'Reads through the caches that change notices keep (accounts by token, directory pages): answered from memory (hit) or loaded from MongoDB (load)',
    labelNames: ['cache', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly budgetShortfall = new Gauge({
    name: 'shelfwatch_plan_shortfall_ratio',
    help: 'Products due per product the last pass could plan in its first step (above 1: more is due than the quota allows, priority 0 stretches)',
    labelNames: ['country'] as const,
    registers: [this.registry],
  });

  readonly countryStopped = new Gauge({
    name: 'shelfwatch_country_stopped',
    help: '1 when a fatal upstream error (credential, eligibility) stopped the country queue',
    labelNames: ['country'] as const,
    registers: [this.registry],
  });

  readonly breakerOpen = new Gauge({
    name: 'shelfwatch_upstream_breaker_open',
    help: "1 while the country's breaker is open: the upstream refuses it (credential, eligibility, persistent throttling), its calls stop and a probe goes out on a backoff",
    labelNames: ['country'] as const,
    registers: [this.registry],
  });

  readonly paceMargin = new Gauge({
    name: 'shelfwatch_quota_pace_margin_seconds',
    help: "The margin the quota governor keeps on top of 1/Q between a country's calls, learnt from the upstream's 429s",
    labelNames: ['country'] as const,
    registers: [this.registry],
  });

  readonly lateSends = new Histogram({
    name: 'shelfwatch_quota_late_send_seconds',
    help: "How much later than its start was counted a call went out (this process's event loop was busy): the next start of the country is moved on by as much",
    labelNames: ['country'] as const,
    buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25],
    registers: [this.registry],
  });

  readonly permits = new Counter({
    name: 'shelfwatch_quota_permits_total',
    help: 'Permits the quota governor granted this process, by country and class (forced, import, refresh, crawl): one per upstream call',
    labelNames: ['country', 'class'] as const,
    registers: [this.registry],
  });

  readonly permitWait = new Histogram({
    name: 'shelfwatch_quota_permit_wait_seconds',
    help: 'How long a call waited for its permit, by country and class',
    labelNames: ['country', 'class'] as const,
    buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly callsLeftToday = new Gauge({
    name: 'shelfwatch_quota_calls_left_today',
    help: "Upstream calls left in the quota day (QUOTA_PER_DAY less every process's calls), as of this process's last permit",
    labelNames: ['country'] as const,
    registers: [this.registry],
  });

  readonly forcedShareUsed = new Gauge({
    name: 'shelfwatch_quota_forced_share_used_ratio',
    help: "Forced-update calls today per forced-update calls allowed today (FORCED_SHARE of QUOTA_PER_DAY), as of this process's last permit",
    labelNames: ['country'] as const,
    registers: [this.registry],
  });

  readonly changesObserved = new Counter({
    name: 'shelfwatch_refresh_changes_observed_total',
    help: 'Refreshed products whose price or availability had moved since they were last seen, by country and priority (divide by shelfwatch_upstream_calls_total for changes observed per call)',
    labelNames: ['country', 'priority'] as const,
    registers: [this.registry],
  });

  readonly deliveries = new Counter({
    name: 'shelfwatch_deliveries_total',
    help: 'Alert webhook attempts of this process, by outcome (delivered, retry, failed, gone, skipped)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly deliveryJobs = new Gauge({
    name: 'shelfwatch_delivery_jobs',
    help: 'Jobs in the deliveries queue, by state',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });

  readonly deliveryOldestPending = new Gauge({
    name: 'shelfwatch_delivery_oldest_pending_seconds',
    help: 'Age of the oldest alert delivery not yet acknowledged (waiting or between retries); 0 when none is',
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'shelfwatch_' });
  }
}
