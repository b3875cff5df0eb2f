import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  RateLimitedError,
  RetryableError,
  UnrecoverableError,
  UpstreamInvalidRequestError,
  UpstreamNotEligibleError,
  UpstreamRateLimitedError,
  UpstreamUnavailableError,
} from '../../src/core/errors.js';
import { CreatorsClient } from '../../src/upstream/creators/client.js';
import { CREDENTIAL_VERSIONS } from '../../src/upstream/creators/credentials.js';
import { createUpstream } from '../../src/upstream/factory.js';
import { findAsins, startHarness, type SimHarness } from './helpers.js';

describe('upstream errors are typed', () => {
  let h: SimHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('429 burst → UpstreamRateLimitedError (a RateLimitedError) with a retry-after', async () => {
    h = await startHarness({ SIMULATOR_FAULTS: '{"throttleBurst":2}' });
    const jp = h.port('JP');
    const [asin] = findAsins(h.sim, 'JP', 'found', 1);
    for (let i = 0; i < 2; i++) {
      const err = await jp.getItems([asin!]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UpstreamRateLimitedError);
      expect(err).toBeInstanceOf(RateLimitedError);
      expect((err as UpstreamRateLimitedError).retryAfterMs).toBe(1000);
    }
    expect((await jp.getItems([asin!])).outcomes[asin!]).toBe('found');
    expect(h.sim.stats().countries.JP?.getItems?.throttled).toBe(2);
  });

  it('eligibility loss → UpstreamNotEligibleError (unrecoverable) for that country only', async () => {
    h = await startHarness();
    await fetch(`${h.sim.url}/__faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"notEligible":["JP"]}',
    });
    const err = await h
      .port('JP')
      .getItems(['B000000001'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamNotEligibleError);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect((err as UpstreamNotEligibleError).reason).toBe('AssociateNotEligible');
    const [asin] = findAsins(h.sim, 'US', 'found', 1);
    expect((await h.port('US').getItems([asin!])).outcomes[asin!]).toBe('found');
  });

  it('5xx → UpstreamUnavailableError (retryable)', async () => {
    h = await startHarness({ SIMULATOR_FAULTS: '{"errorRate":1}' });
    const err = await h
      .port('US')
      .browseNode('1234', 1)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as UpstreamUnavailableError).status).toBe(500);
  });

  it('no answer within the per-call timeout → UpstreamUnavailableError', async () => {
    h = await startHarness({ SIMULATOR_FAULTS: '{"timeoutRate":1}', CREATORS_TIMEOUT_MS: '300' });
    const err = await h
      .port('JP')
      .getItems(['B000000001'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect((err as Error).message).toMatch(/within 300 ms/);
  });

  it('nobody listening → UpstreamUnavailableError', async () => {
    h = await startHarness();
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const { port } = srv.address() as { port: number };
    await new Promise<void>((r) => srv.close(() => r()));
    const jp = createUpstream(h.config, 'JP', { simulatorUrl: `http://127.0.0.1:${port}` });
    const err = await jp.getItems(['B000000001']).catch((e: unknown) => e);
    await jp.close();
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
  });

  it('a request the service refuses (400 ValidationException) → UpstreamInvalidRequestError with its fields', async () => {
    h = await startHarness();
    const shared = h.shared;
    const version = CREDENTIAL_VERSIONS['3.3']!;
    const client = new CreatorsClient({
      country: 'JP',
      marketplace: 'www.amazon.co.jp',
      apiUrl: h.sim.url,
      partnerTag: '',
      credentialVersion: version,
      tokens: shared.tokenSource(
        {
          id: h.config.upstream.simulator.clientId,
          secret: h.config.upstream.simulator.clientSecret,
          version,
          tokenUrl: `${h.sim.url}/auth/o2/token`,
        },
        'JP',
        5000,
      ),
      dispatcher: shared.dispatcher,
      timeoutMs: 5000,
    });
    const err = await client.getItems(['B000000001']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamInvalidRequestError);
    expect((err as UpstreamInvalidRequestError).reason).toBe('FieldValidationFailed');
    expect((err as UpstreamInvalidRequestError).fields.map((f) => f.name)).toContain('partnerTag');
  });
});
