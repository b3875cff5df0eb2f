/**
 * The one list of job kinds, and what is derived from it: the payload schema, class, queue and
 * priority of each job name. Producers parse a payload before adding it and workers parse it again
 * when they take it, because data in Redis is untyped at rest (written by an older version, or by
 * hand). Each kind lives, whole, in its own module.
 */
import type { z } from 'zod';
import type { QuotaClass } from '../src/core/quota-classes.js';
import { InvalidJobPayloadError } from '../src/core/errors.js';
import { browseCrawlJob } from './browse-crawl.js';
import { eanResolveJob } from './ean-import.js';
import type { JobKind } from './kind.js';
import { refreshP0Job, refreshP1Job } from './refresh.js';
import { forcedUpdateJob } from './forced-update.js';

export const JOB_KINDS = [forcedUpdateJob, eanResolveJob, refreshP1Job, refreshP0Job, browseCrawlJob] as const;

type Kind = (typeof JOB_KINDS)[number];
export type JobName = Kind['name'];
type KindOf<N extends JobName> = Extract<Kind, { name: N }>;
/** What a worker gets (defaults applied). */
export type JobPayload<N extends JobName> = z.output<KindOf<N>['payload']>;
/** What a producer gives. */
export type JobInput<N extends JobName> = z.input<KindOf<N>['payload']>;

export const JOB_NAMES: readonly JobName[] = JOB_KINDS.map((k) => k.name);

const byName = new Map<string, JobKind>(JOB_KINDS.map((k) => [k.name, k as unknown as JobKind]));

export function isJobName(name: string): name is JobName {
  return byName.has(name);
}

/** The kind of a job name, as the processor runs it. */
export function kindOf(name: JobName): JobKind {
  return byName.get(name)!;
}

/** BullMQ priority of a job queued without an account, from its name and payload: 1 is the most urgent. */
export function priorityOf<N extends JobName>(name: N, data?: JobPayload<N>): number {
  const kind = kindOf(name);
  return data !== undefined && kind.priorityFor ? kind.priorityFor(data) : kind.priority;
}

/** A job's class: its queue, and whose share of the quota its calls take (src/core/quota-classes.ts). */
export function classOf(name: JobName): QuotaClass {
  return kindOf(name).cls;
}

/** Parses a payload for `name`; throws InvalidJobPayloadError naming the job. */
export function parseJob<N extends JobName>(name: N, data: unknown): JobPayload<N> {
  const result = kindOf(name).payload.safeParse(data);
  if (!result.success) throw new InvalidJobPayloadError(`invalid ${name} payload: ${result.error.issues.map((i) => i.message).join('; ')}`);
  return result.data as JobPayload<N>;
}
