import type { Country } from './countries.js';

/**
 * What the Creators API needs to know about a country: the `x-marketplace` value, the currency its
 * prices come in, the language of its titles, and the credential version whose region group covers
 * it (JP is in the FE group, 3.3; US in NA, 3.1).
 */
export interface Marketplace {
  readonly country: Country;
  readonly host: string;
  readonly currency: string;
  readonly language: 'ja_JP' | 'en_US';
  readonly defaultCredentialVersion: string;
}

export const MARKETPLACES: Readonly<Record<Country, Marketplace>> = Object.freeze({
  JP: { country: 'JP', host: 'www.amazon.co.jp', currency: 'JPY', language: 'ja_JP', defaultCredentialVersion: '3.3' },
  US: { country: 'US', host: 'www.amazon.com', currency: 'USD', language: 'en_US', defaultCredentialVersion: '3.1' },
});
