/**
 * The one list of job kinds, and what is derived from it: the payload schema, scope, class, queue
 * and priority of each job name. Producers parse a payload before adding it and workers parse it
 * again when they take it, because data in Redis is untyped at rest (written by an older version,
 * or by hand). Each kind lives, whole, in its own module.
 */
import type { z } from 'zod';
import type { QuotaClass } from '../src/core/quota-classes.js';
import type { Country } from '../src/core/identifiers.js';
import { InvalidJobPayloadError } from '../src/core/errors.js';
import { browseCrawlJob } from './browse-crawl.js';
import { eanResolveJob } from './ean-resolve.js';
import type { CountryJobKind, JobKind } from './kind.js';
import { refreshP0Job, refreshP1Job } from './refresh.js';
import { forcedUpdateJob } from './forced-update.js';
import { deliveryJob } from './deliver.js';

export const JOB_KINDS = [forcedUpdateJob, eanResolveJob, refreshP1Job, refreshP0Job, browseCrawlJob, deliveryJob] as const;

type Kind = (typeof JOB_KINDS)[number];
export type JobName = Kind['name'];
/** The kinds whose jobs wait in a queue of their country. */
export type CountryJobName = Extract<Kind, { scope: 'country' }>['name'];
type KindOf<N extends JobName> = Extract<Kind, { name: N }>;
/** What a worker gets (defaults applied). */
export type JobPayload<N extends JobName> = z.output<KindOf<N>['payload']>;
/** What a producer gives. */
export type JobInput<N extends JobName> = z.input<KindOf<N>['payload']>;

export const JOB_NAMES: readonly JobName[] = JOB_KINDS.map((k) => k.name);
export const COUNTRY_JOB_NAMES: readonly CountryJobName[] = JOB_KINDS.flatMap((k) => (k.scope === 'country' ? [k.name] : []));

const byName = new Map<string, JobKind>(JOB_KINDS.map((k) => [k.name, k as unknown as JobKind]));

export function isJobName(name: string): name is JobName {
  return byName.has(name);
}

/** A job of a country's queue, as the country's processor runs it. */
export function isCountryJobName(name: string): name is CountryJobName {
  return byName.get(name)?.scope === 'country';
}

/** The kind of a country job name, as the processor runs it. */
export function kindOf(name: CountryJobName): CountryJobKind {
  return byName.get(name) as CountryJobKind;
}

/** BullMQ priority of a job queued without an account, from its name and payload: 1 is the most urgent. */
export function priorityOf<N extends CountryJobName>(name: N, data?: JobPayload<N>): number {
  const kind = kindOf(name);
  return data !== undefined && kind.priorityFor ? kind.priorityFor(data as { country: Country }) : kind.priority;
}

/** A job's class: its queue, and whose share of the quota its calls take (src/core/quota-classes.ts). */
export function classOf(name: CountryJobName): QuotaClass {
  return kindOf(name).cls;
}

/** Parses a payload against a kind's schema; throws InvalidJobPayloadError naming the job. */
export function parsePayload<S extends z.ZodType>(kind: { readonly name: string; readonly payload: S }, data: unknown): z.output<S> {
  const result = kind.payload.safeParse(data);
  if (!result.success)
    throw new InvalidJobPayloadError(`invalid ${kind.name} payload: ${result.error.issues.map((i) => i.message).join('; ')}`);
  return result.data;
}

/** Parses a payload for `name`; throws InvalidJobPayloadError naming the job. */
export function parseJob<N extends JobName>(name: N, data: unknown): JobPayload<N> {
  return parsePayload(byName.get(name)!, data) as JobPayload<N>;
}

/** `parseJob` for a job of a country's queue, whose payload names its country. */
export function parseCountryJob<N extends CountryJobName>(name: N, data: unknown): JobPayload<N> & { country: Country } {
  return parseJob(name, data) as JobPayload<N> & { country: Country };
}
