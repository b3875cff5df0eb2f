import { z } from 'zod';
import type { Country } from '../core/identifiers.js';
import type { QuotaClass } from '../core/quota-classes.js';
import { OBJECT_ID_RE } from '../db/mongo.js';

/**
 * The classes whose jobs are queued fairly between accounts: each has work that one account asks
 * for (a forced update, an import, a crawl of a node it watches). Scheduled refreshes are not: a
 * refresh batch serves every watcher of its products, and the planner already spreads the
 * country's calls over what is due.
 */
export const FAIR_CLASSES: readonly QuotaClass[] = ['forced', 'import', 'crawl'];

export function isFairClass(cls: QuotaClass): boolean {
  return FAIR_CLASSES.includes(cls);
}

/** The fair-queuing lane of a class in a country: its queue's jobs share out its workers. */
export function fairLane(cls: QuotaClass, country: Country): string {
  return `${cls}:${country}`;
}

/** What a fairly queued job carries in its payload: the account it is for, its start tag, and whether it began a turn. */
export const fairSchema = z.object({
  account: z.string().regex(OBJECT_ID_RE),
  tag: z.number().nonnegative(),
  /** The account had nothing queued in the lane when the job was added (its tag was V). */
  fresh: z.boolean().optional(),
});
export type Fair = z.output<typeof fairSchema>;

/** An account a producer acts for, with its weight (AccountWeights, or the authenticated user's). */
export interface AccountRef {
  readonly id: string;
  readonly weight: number;
}
