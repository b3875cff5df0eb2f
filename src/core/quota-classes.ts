/**
 * The classes of upstream work. Each country's quota is shared between them: under contention every
 * class that has work gets at least its share of the calls a second (start-time fair queuing in
 * the governor's script), and what a class leaves unused goes to the others, so the country runs at
 * its full pace whenever anyone has work. Per day, forced updates, imports and crawls may spend at
 * most their share of the day; scheduled refreshes may spend what the reserve for forced updates
 * leaves.
 */
import { QUOTA_CLASSES, type ClassShares, type QuotaClass } from '../../config/quota-classes.js';

export { QUOTA_CLASSES, type ClassShares, type QuotaClass } from '../../config/quota-classes.js';

/*
 * - `forced`: forced updates (`/api/world/update`), which a client waits for;
 * - `import`: EAN imports' search pages;
 * - `refresh`: the planner's scheduled refreshes (priority 1 before priority 0);
 * - `crawl`: browse-node crawls' pages.
 * The list's order breaks ties: with equal claims, a forced update goes first.
 */

/** The variable that sets each class's share, for messages that name it. */
export const SHARE_VARIABLE: Readonly<Record<QuotaClass, string>> = {
  forced: 'FORCED_SHARE',
  import: 'IMPORT_SHARE',
  refresh: 'the shares of the other classes',
  crawl: 'CRAWL_SHARE',
};

/** Each class in words, for messages. */
export const CLASS_WORDS: Readonly<Record<QuotaClass, string>> = {
  forced: 'forced updates',
  import: 'EAN imports',
  refresh: 'scheduled refreshes',
  crawl: 'browse crawls',
};

/** The field of the day's count (Redis hash and MongoDB copy) that counts a class's own calls; refresh has none. */
export const DAY_FIELD: Readonly<Record<QuotaClass, string | null>> = {
  forced: 'od',
  import: 'im',
  refresh: null,
  crawl: 'cr',
};

export function isQuotaClass(v: string): v is QuotaClass {
  return (QUOTA_CLASSES as readonly string[]).includes(v);
}

/**
 * Shares from the three configured ones: refresh has what they leave (at least a hundredth, so its
 * weight in the governor's fair queuing is never zero).
 */
export function classShares(s: { readonly forced: number; readonly import?: number; readonly crawl?: number }): ClassShares {
  const imp = s.import ?? 0.1;
  const crawl = s.crawl ?? 0.1;
  return { forced: s.forced, import: imp, crawl, refresh: Math.max(0.01, 1 - s.forced - imp - crawl) };
}
