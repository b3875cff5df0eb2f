/**
 * Builds the upstream port of a country from the configuration: the Creators API client, pointed
 * at Amazon (UPSTREAM=creators) or at a simulator (UPSTREAM=simulator). Both are the same client:
 * the simulator speaks the real wire format, so the code path tested is the code path shipped.
 */
import type { Agent } from 'undici';
import type { Config } from '../../config/env.js';
import { quotaIntervalMs } from '../../config/quota.js';
import type { Country } from '../core/identifiers.js';
import { UnrecoverableError } from '../core/errors.js';
import { CreatorsClient } from './creators/client.js';
import { TOKEN_PATHS, type Credential } from './creators/credentials.js';
import { createKeepAliveAgent } from './creators/http.js';
import type { BeforeSend } from './creators/sent-at.js';
import { TokenSource } from './creators/token.js';
import type { UpstreamPort } from './port.js';
import { withTimeout } from '../db/mongo.js';

/** Connections and tokens shared by the ports of one process (one token per credential). */
export interface UpstreamShared {
  readonly dispatcher: Agent;
  tokenSource(credential: Credential, country: Country, timeoutMs: number, now?: () => number): TokenSource;
  /** Fetches every credential's token ahead of the first call (a worker starting). */
  warm(): void;
  close(): Promise<void>;
}

export function createUpstreamShared(): UpstreamShared {
  const dispatcher = createKeepAliveAgent();
  const sources = new Map<string, TokenSource>();
  return {
    dispatcher,
    tokenSource(credential, country, timeoutMs, now) {
      const key = `${credential.tokenUrl}\n${credential.version.version}\n${credential.id}`;
      let s = sources.get(key);
      if (!s) sources.set(key, (s = new TokenSource({ credential, country, dispatcher, timeoutMs, now })));
      return s;
    },
    warm: () => {
      for (const s of sources.values()) s.warm();
    },
    // Closing waits for requests in flight; what is still in flight once the workers have drained
    // belongs to jobs cut off at the deadline, which are retried, so it is not worth the wait.
    close: async () => {
      try {
        await withTimeout(dispatcher.close(), CLOSE_GRACE_MS, 'upstream connections close');
      } catch {
        await dispatcher.destroy();
      }
    },
  };
}

/** How long closing the upstream connections waits for requests still in flight. */
const CLOSE_GRACE_MS = 500;

export interface CreateUpstreamOptions {
  /** The simulator to use with UPSTREAM=simulator: the one `all` started, else SIMULATOR_URL. */
  readonly simulatorUrl?: string;
  /** Share connections and tokens with other ports; without it the port owns its own and close() frees them. */
  readonly shared?: UpstreamShared;
  /** Clock for token expiry (tests). */
  readonly now?: () => number;
  /** Awaited before every catalog request goes on the wire (the quota governor's permit). */
  readonly beforeSend?: BeforeSend;
}

/**
 * What the factory reads of the configuration: the upstream part, and the country's quota when
 * there is one (the pace a 429 without Retry-After stands for).
 */
export type UpstreamFactoryConfig = Pick<Config, 'upstream'> & {
  readonly quota?: { readonly quotas: Readonly<Partial<Record<Country, { readonly perSecond: number }>>> };
};

export function createUpstream(config: UpstreamFactoryConfig, country: Country, opts: CreateUpstreamOptions = {}): UpstreamPort {
  const up = config.upstream;
  const cc = up.countries[country];
  if (!cc) throw new UnrecoverableError(`no upstream configuration for ${country}: add it to COUNTRIES`);
  let apiUrl: string;
  let credential: Credential;
  if (up.kind === 'simulator') {
    const url = opts.simulatorUrl ?? up.simulator.url;
    if (!url)
      throw new UnrecoverableError(
        'UPSTREAM=simulator but no simulator runs here: start `shelfwatch simulator` and set SIMULATOR_URL, or run role all',
      );
    apiUrl = url.replace(/\/+$/, '');
    credential = {
      id: up.simulator.clientId,
      secret: up.simulator.clientSecret,
      version: cc.credentialVersion,
      tokenUrl: cc.tokenUrl ?? `${apiUrl}${TOKEN_PATHS[cc.credentialVersion.flavour]}`,
    };
  } else {
    if (cc.credentialId === undefined || cc.credentialSecret === undefined) {
      throw new UnrecoverableError(
        `CREATORS_CREDENTIAL_ID_${country} and CREATORS_CREDENTIAL_SECRET_${country} are required with UPSTREAM=creators`,
      );
    }
    apiUrl = up.apiUrl;
    credential = {
      id: cc.credentialId,
      secret: cc.credentialSecret,
      version: cc.credentialVersion,
      tokenUrl: cc.tokenUrl ?? cc.credentialVersion.tokenUrl,
    };
  }
  const shared = opts.shared ?? createUpstreamShared();
  const quota = config.quota?.quotas[country];
  return new CreatorsClient({
    country,
    marketplace: cc.marketplace,
    apiUrl,
    partnerTag: cc.partnerTag,
    credentialVersion: cc.credentialVersion,
    tokens: shared.tokenSource(credential, country, up.timeoutMs, opts.now),
    dispatcher: shared.dispatcher,
    timeoutMs: up.timeoutMs,
    // The quota governor spaces the country's calls by the same 1/Q.
    paceMs: quota ? quotaIntervalMs(quota) : undefined,
    onClose: opts.shared ? undefined : () => shared.close(),
    now: opts.now,
    beforeSend: opts.beforeSend,
  });
}
