import { z } from 'zod';

// config/ checks COUNTRIES against this list and may not import src/, so the list lives there.
export { COUNTRY_CODES, countrySchema, type Country } from '../../config/countries.js';

/** An ASIN: exactly 10 characters of [0-9A-Z] (we upper-case what clients send). */
export const ASIN_RE = /^[0-9A-Z]{10}$/;
export const asinSchema = z
  .string()
  .transform((s) => s.toUpperCase())
  .pipe(z.string().regex(ASIN_RE, 'must be 10 letters or digits.'))
  .meta({
    description: 'An ASIN: 10 letters or digits (upper-cased).',
    override: { type: 'string', pattern: '^[0-9A-Za-z]{10}$' },
    example: 'B00TEST001',
  });

/** EAN-13 (JAN is an EAN-13 with prefix 45 or 49): 13 digits whose last is the check digit. */
export function isValidEan13(code: string): boolean {
  if (!/^\d{13}$/.test(code)) return false;
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(code[i]) * (i % 2 === 0 ? 1 : 3);
  return (10 - (sum % 10)) % 10 === Number(code[12]);
}
export const eanSchema = z
  .string()
  .refine(isValidEan13, 'must be 13 digits with a valid EAN-13 check digit.')
  .meta({
    description: 'A JAN/EAN-13: 13 digits, the last a valid check digit.',
    override: { type: 'string', pattern: '^\\d{13}$' },
    example: '4901234567894',
  });

/** A browse node id: digits only (clients send it as a string or an integer). */
const BROWSE_NODE_PATTERN = '^[1-9]\\d{0,19}$';
export const browseNodeSchema = z
  .union([z.string(), z.number()])
  .transform((v) => String(v))
  .pipe(z.string().regex(new RegExp(BROWSE_NODE_PATTERN), 'must be a browse node id (digits only).'))
  .meta({
    description: 'A browse node id: digits, as a string or an integer.',
    example: '2275256051',
    override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
      delete jsonSchema.type;
      jsonSchema.anyOf = [
        { type: 'string', pattern: BROWSE_NODE_PATTERN },
        { type: 'integer', minimum: 1 },
      ];
    },
  });
