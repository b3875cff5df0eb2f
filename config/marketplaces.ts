import type { Country } from './countries.js';
import { regionOf, type CredentialRegion } from './creators-api.js';

/** The default language of each marketplace, as PA-API 5's locale reference gives it. */
export type MarketplaceLanguage =
  | 'ja_JP'
  | 'en_US'
  | 'en_CA'
  | 'es_MX'
  | 'pt_BR'
  | 'en_GB'
  | 'de_DE'
  | 'fr_FR'
  | 'it_IT'
  | 'es_ES'
  | 'nl_NL'
  | 'sv_SE'
  | 'pl_PL'
  | 'fr_BE'
  | 'tr_TR'
  | 'en_AE'
  | 'en_IN'
  | 'en_AU'
  | 'en_SG';

/**
 * What the Creators API needs to know about a country: the `x-marketplace` value, the currency its
 * prices come in, the language of its titles, and the credential version whose region group covers
 * it (3.1 NA, 3.2 EU, 3.3 FE; see REGION_COUNTRIES).
 */
export interface Marketplace {
  readonly country: Country;
  readonly host: string;
  readonly currency: string;
  readonly language: MarketplaceLanguage;
  readonly defaultCredentialVersion: string;
}

// EG and SA have the Emirates' locales (en_AE, ar_AE), English by default, as the locale reference has it.
export const MARKETPLACES: Readonly<Record<Country, Marketplace>> = Object.freeze({
  JP: { country: 'JP', host: 'www.amazon.co.jp', currency: 'JPY', language: 'ja_JP', defaultCredentialVersion: '3.3' },
  US: { country: 'US', host: 'www.amazon.com', currency: 'USD', language: 'en_US', defaultCredentialVersion: '3.1' },
  CA: { country: 'CA', host: 'www.amazon.ca', currency: 'CAD', language: 'en_CA', defaultCredentialVersion: '3.1' },
  MX: { country: 'MX', host: 'www.amazon.com.mx', currency: 'MXN', language: 'es_MX', defaultCredentialVersion: '3.1' },
  BR: { country: 'BR', host: 'www.amazon.com.br', currency: 'BRL', language: 'pt_BR', defaultCredentialVersion: '3.1' },
  UK: { country: 'UK', host: 'www.amazon.co.uk', currency: 'GBP', language: 'en_GB', defaultCredentialVersion: '3.2' },
  DE: { country: 'DE', host: 'www.amazon.de', currency: 'EUR', language: 'de_DE', defaultCredentialVersion: '3.2' },
  FR: { country: 'FR', host: 'www.amazon.fr', currency: 'EUR', language: 'fr_FR', defaultCredentialVersion: '3.2' },
  IT: { country: 'IT', host: 'www.amazon.it', currency: 'EUR', language: 'it_IT', defaultCredentialVersion: '3.2' },
  ES: { country: 'ES', host: 'www.amazon.es', currency: 'EUR', language: 'es_ES', defaultCredentialVersion: '3.2' },
  NL: { country: 'NL', host: 'www.amazon.nl', currency: 'EUR', language: 'nl_NL', defaultCredentialVersion: '3.2' },
  SE: { country: 'SE', host: 'www.amazon.se', currency: 'SEK', language: 'sv_SE', defaultCredentialVersion: '3.2' },
  PL: { country: 'PL', host: 'www.amazon.pl', currency: 'PLN', language: 'pl_PL', defaultCredentialVersion: '3.2' },
  BE: { country: 'BE', host: 'www.amazon.com.be', currency: 'EUR', language: 'fr_BE', defaultCredentialVersion: '3.2' },
  TR: { country: 'TR', host: 'www.amazon.com.tr', currency: 'TRY', language: 'tr_TR', defaultCredentialVersion: '3.2' },
  EG: { country: 'EG', host: 'www.amazon.eg', currency: 'EGP', language: 'en_AE', defaultCredentialVersion: '3.2' },
  SA: { country: 'SA', host: 'www.amazon.sa', currency: 'SAR', language: 'en_AE', defaultCredentialVersion: '3.2' },
  AE: { country: 'AE', host: 'www.amazon.ae', currency: 'AED', language: 'en_AE', defaultCredentialVersion: '3.2' },
  IN: { country: 'IN', host: 'www.amazon.in', currency: 'INR', language: 'en_IN', defaultCredentialVersion: '3.2' },
  AU: { country: 'AU', host: 'www.amazon.com.au', currency: 'AUD', language: 'en_AU', defaultCredentialVersion: '3.3' },
  SG: { country: 'SG', host: 'www.amazon.sg', currency: 'SGD', language: 'en_SG', defaultCredentialVersion: '3.3' },
});

/** Associates tracking ids end in their region's suffix (e.g. amazon.de's in -21): the real service refuses another. */
const TAG_SUFFIX: Readonly<Record<CredentialRegion, string>> = Object.freeze({ NA: '-20', EU: '-21', FE: '-22' });

export function partnerTagSuffix(country: Country): string {
  return TAG_SUFFIX[regionOf(country)];
}
