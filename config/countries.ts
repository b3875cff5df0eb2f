import { z } from 'zod';

/** Country codes we serve. Each has its own upstream marketplace, quota and queue. */
export const COUNTRY_CODES = ['JP', 'US'] as const;
export const countrySchema = z.enum(COUNTRY_CODES);
export type Country = z.infer<typeof countrySchema>;
