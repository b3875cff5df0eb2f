/**
 * The one registry of jobs: every job name, its payload schema and its priority. Producers parse a
 * payload before adding it and workers parse it again when they take it, because data in Redis is
 * untyped at rest (it may have been written by an older version, or by hand).
 *
 * Every upstream call of a country takes a permit of that country's quota governor, whatever job
 * makes it. A country has two queues: forced updates, which a client waits for, have one of their
 * own, so a job never waits for a worker slot behind a backlog of refreshes (and stalled refreshes,
 * which BullMQ puts back ahead of every prioritized job, never overtake them); every other kind
 * shares the work queue, ordered by priority (lower runs first).
 */
import { z } from 'zod';
import { ASIN_RE, countrySchema, isValidEan13 } from '../src/catalog/identifiers.js';
import type { Lane } from '../src/quota/lanes.js';

const asin = z.string().regex(ASIN_RE);
const objectId = z.string().regex(/^[0-9a-f]{24}$/);
/** Up to 10 distinct ASINs: the upstream's getItems limit. */
const asinBatch = z.array(asin).min(1).max(10).refine((a) => new Set(a).size === a.length, 'duplicate ASIN');

export const jobPayloads = {
  /** `/api/world/update`: a client waits for this one. */
  'world.update': z.object({ country: countrySchema, asins: asinBatch, claim: z.string().max(64).optional() }),
  /**
   * One page of resolving an EAN import in one country. Like a browse crawl, each page is its own
   * job (enqueued by the one before), so every search call takes its own permit of the quota governor.
   */
  'ean.resolve': z.object({
    country: countrySchema, importId: objectId, userId: objectId, ean: z.string().refine(isValidEan13),
    page: z.number().int().min(1).max(10).default(1),
  }),
  /** Scheduled refreshes, by the products' effective priority. */
  // `due`: the earliest due time in the batch (epoch ms), for the refresh-lag metric.
  // `claim`: the plan's token on the products; a worker skips those whose claim has moved on.
  'refresh.p1': z.object({ country: countrySchema, asins: asinBatch, due: z.number().int().optional(), claim: z.string().max(64).optional() }),
  'refresh.p0': z.object({ country: countrySchema, asins: asinBatch, due: z.number().int().optional(), claim: z.string().max(64).optional() }),
  /**
   * One page of a watched browse node. Each page is its own job, so every upstream call takes the
   * quota governor's permit; the next page is enqueued by the job before it. `found`: ASINs on earlier pages.
   */
  'browse.crawl': z.object({
    country: countrySchema,
    nodeId: z.string().regex(/^\d{1,20}$/),
    page: z.number().int().min(1).max(10).default(1),
    found: z.number().int().min(0).default(0),
    crawlId: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/).optional(),
  }),
} as const;

export type JobName = keyof typeof jobPayloads;
/** What a worker gets (defaults applied). */
export type JobPayload<N extends JobName> = z.output<(typeof jobPayloads)[N]>;
/** What a producer gives. */
export type JobInput<N extends JobName> = z.input<(typeof jobPayloads)[N]>;
export const JOB_NAMES = Object.keys(jobPayloads) as JobName[];

/** BullMQ priorities: 1 is the most urgent. Every job gets one (jobs without run before all others). */
export const JOB_PRIORITY: Readonly<Record<JobName, number>> = {
  'world.update': 1,
  'ean.resolve': 2,
  'refresh.p1': 3,
  'refresh.p0': 4,
  'browse.crawl': 5,
};

/** Whose share of the quota a job's calls take (src/quota/lanes.ts). */
export const JOB_LANE: Readonly<Record<JobName, Lane>> = {
  'world.update': 'ondemand',
  'ean.resolve': 'ondemand',
  'refresh.p1': 'scheduled',
  'refresh.p0': 'scheduled',
  'browse.crawl': 'scheduled',
};

export const QUEUE_KINDS = ['work', 'update'] as const;
export type QueueKind = (typeof QUEUE_KINDS)[number];

/** Which of its country's queues a job goes to. */
export function queueKindOf(name: JobName): QueueKind {
  return name === 'world.update' ? 'update' : 'work';
}

/**
 * The id of an import's resolve job for one country and page. Every producer (the api, the job of
 * the page before, the scheduler's sweep) uses it, so a page is never queued twice while its job
 * exists. Page 1 keeps the id it had before resolving went page by page.
 */
export function eanResolveJobId(importId: string, country: string, page: number): string {
  return page === 1 ? `ean-${importId}-${country}` : `ean-${importId}-${country}-p${page}`;
}

export class InvalidJobPayloadError extends Error {
  override readonly name = 'InvalidJobPayloadError';
}

export function isJobName(name: string): name is JobName {
  return Object.hasOwn(jobPayloads, name);
}

/** Parses a payload for `name`; throws InvalidJobPayloadError naming the job. */
export function parseJob<N extends JobName>(name: N, data: unknown): JobPayload<N> {
  const result = jobPayloads[name].safeParse(data);
  if (!result.success) throw new InvalidJobPayloadError(`invalid ${name} payload: ${result.error.issues.map((i) => i.message).join('; ')}`);
  return result.data as JobPayload<N>;
}
