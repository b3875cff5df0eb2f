/**
 * The Creators API's published endpoints: the catalog API's URL and, per credential version, the
 * token endpoint. The version an operator is given decides the token endpoint, its scope spelling and how the token request and the catalog
 * Authorization header are written:
 * - 2.x: Amazon Cognito. Form-encoded token request; catalog header `Bearer <token>, Version 2.x`.
 * - 3.x: Login with Amazon. JSON token request; catalog header `Bearer <token>`.
 */
import type { Country } from './countries.js';

export type TokenFlavour = 'cognito' | 'lwa';

/**
 * The region groups of the Creators API: a credential is issued for one group, and its token
 * endpoint is that group's.
 */
export type CredentialRegion = 'NA' | 'EU' | 'FE';

/** The marketplaces each region group serves (EU takes in the Middle East and India). */
export const REGION_COUNTRIES: Readonly<Record<CredentialRegion, readonly Country[]>> = Object.freeze({
  NA: ['US', 'CA', 'MX', 'BR'],
  EU: ['UK', 'DE', 'FR', 'IT', 'ES', 'NL', 'SE', 'PL', 'BE', 'TR', 'EG', 'SA', 'AE', 'IN'],
  FE: ['JP', 'AU', 'SG'],
});

export interface CredentialVersion {
  readonly version: string;
  readonly flavour: TokenFlavour;
  readonly region: CredentialRegion;
  readonly tokenUrl: string;
  readonly scope: string;
}

const COGNITO_SCOPE = 'creatorsapi/default';
const LWA_SCOPE = 'creatorsapi::default';

export const CREDENTIAL_VERSIONS: Readonly<Record<string, CredentialVersion>> = Object.freeze({
  '2.1': {
    version: '2.1',
    flavour: 'cognito',
    region: 'NA',
    tokenUrl: 'https://creatorsapi.auth.us-east-1.amazoncognito.com/oauth2/token',
    scope: COGNITO_SCOPE,
  },
  '2.2': {
    version: '2.2',
    flavour: 'cognito',
    region: 'EU',
    tokenUrl: 'https://creatorsapi.auth.eu-south-2.amazoncognito.com/oauth2/token',
    scope: COGNITO_SCOPE,
  },
  '2.3': {
    version: '2.3',
    flavour: 'cognito',
    region: 'FE',
    tokenUrl: 'https://creatorsapi.auth.us-west-2.amazoncognito.com/oauth2/token',
    scope: COGNITO_SCOPE,
  },
  '3.1': { version: '3.1', flavour: 'lwa', region: 'NA', tokenUrl: 'https://api.amazon.com/auth/o2/token', scope: LWA_SCOPE },
  '3.2': { version: '3.2', flavour: 'lwa', region: 'EU', tokenUrl: 'https://api.amazon.co.uk/auth/o2/token', scope: LWA_SCOPE },
  '3.3': { version: '3.3', flavour: 'lwa', region: 'FE', tokenUrl: 'https://api.amazon.co.jp/auth/o2/token', scope: LWA_SCOPE },
});

export const CREATORS_API_URL = 'https://creatorsapi.amazon';

export function credentialVersion(version: string): CredentialVersion | undefined {
  return CREDENTIAL_VERSIONS[version];
}

/** The region group whose credentials serve `country`. */
export function regionOf(country: Country): CredentialRegion {
  return (Object.keys(REGION_COUNTRIES) as CredentialRegion[]).find((r) => REGION_COUNTRIES[r].includes(country))!;
}
