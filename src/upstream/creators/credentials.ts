import type { CredentialVersion, TokenFlavour } from '../../../config/creators-api.js';

// config/ validates each country's credential version and may not import src/, so the versions live there.
export { CREDENTIAL_VERSIONS, type CredentialVersion, type TokenFlavour } from '../../../config/creators-api.js';

/** Token paths of the two flavours, as the simulator serves them on its one host. */
export const TOKEN_PATHS: Readonly<Record<TokenFlavour, string>> = Object.freeze({ cognito: '/oauth2/token', lwa: '/auth/o2/token' });

/** What the client needs to obtain tokens for one credential. */
export interface Credential {
  readonly id: string;
  readonly secret: string;
  readonly version: CredentialVersion;
  readonly tokenUrl: string;
}
