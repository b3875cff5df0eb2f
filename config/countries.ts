import { z } from 'zod';

/** Country codes we serve. Each has its own upstream marketplace, quota and queue. */
export const COUNTRY_CODES = ['JP', 'US'] as const;
export const countrySchema = z.enum(COUNTRY_CODES);
export type Country = z.infer<typeof countrySchema>;

/** A comma list of country codes (any case, repeats dropped), at least one. */
export const countryList = z
  .string()
  .transform((v) => [
    ...new Set(
      v
        .split(',')
        .map((c) => c.trim().toUpperCase())
        .filter(Boolean),
    ),
  ])
  .pipe(
    z
      .array(z.enum(COUNTRY_CODES, { error: `must be a comma list of ${COUNTRY_CODES.join(', ')}` }))
      .min(1, 'must name at least one country'),
  );
