/**
 * The classes of upstream work that share each country's quota (src/core/quota-classes.ts says what each
 * is). Here, in the configuration layer, because each class's share is configured.
 */
export const QUOTA_CLASSES = ['forced', 'import', 'refresh', 'crawl'] as const;

export type QuotaClass = (typeof QUOTA_CLASSES)[number];

/** Each class's share of the country's calls (a second under contention; of the day, for all but refresh). */
export type ClassShares = Readonly<Record<QuotaClass, number>>;
