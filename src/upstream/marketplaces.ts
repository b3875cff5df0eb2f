import type { Country } from '../core/identifiers.js';
import { MARKETPLACES, partnerTagSuffix, type Marketplace } from '../../config/marketplaces.js';

// config/ reads the table for each country's defaults and may not import src/, so it lives there.
export { MARKETPLACES, partnerTagSuffix, type Marketplace };

/** The country whose marketplace host is `host`, if we serve it. */
export function countryOfMarketplace(host: string): Country | undefined {
  return (Object.values(MARKETPLACES) as Marketplace[]).find((m) => m.host === host)?.country;
}

/** Digits by currency, worked out once each: every price normalised asks, and a formatter is costly to build. */
const DIGITS = new Map<string, number>();

/** Digits after the decimal point of a currency (0 for JPY, 2 for USD and the other marketplaces' currencies), from ICU. */
export function currencyDigits(currency: string): number {
  let digits = DIGITS.get(currency);
  if (digits === undefined) {
    digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
    DIGITS.set(currency, digits);
  }
  return digits;
}
