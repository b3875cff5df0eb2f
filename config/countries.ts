import { z } from 'zod';

/**
 * Country codes we know: the 21 marketplaces of the Creators API, in Amazon's spelling (UK, not
 * GB). Each has its own upstream marketplace, quota and queue. JP and US, the contract's known
 * values and the default, come first; the rest follow by the credential region that serves them.
 */
export const COUNTRY_CODES = [
  'JP',
  'US',
  'CA',
  'MX',
  'BR',
  'UK',
  'DE',
  'FR',
  'IT',
  'ES',
  'NL',
  'SE',
  'PL',
  'BE',
  'TR',
  'EG',
  'SA',
  'AE',
  'IN',
  'AU',
  'SG',
] as const;
export const countrySchema = z.enum(COUNTRY_CODES);
export type Country = z.infer<typeof countrySchema>;

/**
 * COUNTRIES when unset. The interface contract names JP and US as the country values, so a
 * deployment serves the other marketplaces only once it lists them.
 */
export const DEFAULT_COUNTRIES: readonly Country[] = ['JP', 'US'];

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
  )
  .meta({ type: 'country list' });
