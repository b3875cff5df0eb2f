import { createRequire } from 'node:module';
import type * as Luxon from 'luxon';

/**
 * luxon as its CommonJS build. BullMQ's cron-parser requires that build; an `import` from here
 * would load the ES build beside it, and every process would hold luxon twice (its source alone is
 * half a megabyte, and its compiled code and tables more).
 */
const luxon = createRequire(import.meta.url)('luxon') as typeof Luxon;

export const { DateTime, IANAZone } = luxon;
export type DateTime = Luxon.DateTime;
