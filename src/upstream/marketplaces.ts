import type { Country } from '../catalog/identifiers.js';
import { MARKETPLACES, type Marketplace } from '../../config/marketplaces.js';

// config/ reads the table for each country's defaults and may not import src/, so it lives there.
export { MARKETPLACES, type Marketplace };

/** The country whose marketplace host is `host`, if we serve it. */
export function countryOfMarketplace(host: string): Country | undefined {
  return (Object.values(MARKETPLACES) as Marketplace[]).find((m) => m.host === host)?.country;
}

/** Digits after the decimal point of a currency (0 for JPY, 2 for USD), from ICU. */
export function currencyDigits(currency: string): number {
  return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
}
