import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import { createLogger } from '../../src/logger.js';
import { startSimulator, type RunningSimulator } from '../../src/simulator/server.js';
import { UpstreamAuthError } from '../../src/core/errors.js';
import { createUpstream } from '../../src/upstream/factory.js';
import { until } from '../helpers/until.js';
import { findAsins, ManualClock, simEnv, startHarness, totalCalls, type SimHarness } from './helpers.js';

describe('access tokens', () => {
  const open: { close(): Promise<void> }[] = [];
  const harness = async (extra: Record<string, string> = {}, clock?: ManualClock): Promise<SimHarness> => {
    const h = await startHarness(extra, clock);
    open.push(h);
    return h;
  };
  afterEach(async () => {
    while (open.length) await open.pop()!.close();
  });

  it('100 concurrent calls share one token request', async () => {
    const h = await harness();
    const jp = h.port('JP');
    const asins = findAsins(h.sim, 'JP', 'found', 100);
    const results = await Promise.all(asins.map((a) => jp.getItems([a])));
    expect(results.every((r, i) => r.outcomes[asins[i]!] === 'found')).toBe(true);
    expect(h.sim.stats().tokens.issued).toBe(1);
    expect(h.sim.stats().countries.JP?.getItems?.calls).toBe(100);
  });

  it('is renewed before it expires, and reused until then', async () => {
    const h = await harness({ SIMULATOR_TOKEN_TTL_S: '600' });
    const jp = h.port('JP');
    const [asin] = findAsins(h.sim, 'JP', 'found', 1);
    await jp.getItems([asin!]);
    h.clock.advance(500_000); // 100 s left: still outside the 30 s renewal margin
    await jp.getItems([asin!]);
    expect(h.sim.stats().tokens.issued).toBe(1);
    h.clock.advance(80_000); // 20 s left: inside the margin, renewed beside the call
    await jp.getItems([asin!]);
    await until('the renewal', async () => (h.sim.stats().tokens.issued === 2 ? true : undefined));
    expect(h.sim.stats().tokens.refused).toBe(0);
  });

  it('an expired token refused by the service is renewed once and the call succeeds', async () => {
    const simClock = new ManualClock();
    const clientClock = new ManualClock(simClock.t);
    const h = await harness({ SIMULATOR_TOKEN_TTL_S: '60' }, simClock);
    const jp = h.port('JP', clientClock);
    const [asin] = findAsins(h.sim, 'JP', 'found', 1);
    await jp.getItems([asin!]);
    simClock.advance(61_000); // the client's clock lags: it still believes its token good
    const res = await jp.getItems([asin!]);
    expect(res.outcomes[asin!]).toBe('found');
    expect(h.sim.stats().tokens.issued).toBe(2);
    expect(totalCalls(h.sim)).toBe(3);
  });

  it('a token the service did not issue is renewed once, then the error is fatal', async () => {
    // Tokens come from simulator A; catalog calls go to simulator B, which never issued them.
    const config = loadConfig(simEnv());
    const logger = createLogger(config);
    const a: RunningSimulator = await startSimulator(config.upstream.simulator, logger);
    const b: RunningSimulator = await startSimulator(config.upstream.simulator, logger);
    open.push(a, b);
    const foreign = loadConfig(simEnv({ CREATORS_TOKEN_URL_JP: `${a.url}/auth/o2/token` }));
    const jp = createUpstream(foreign, 'JP', { simulatorUrl: b.url });
    open.push(jp);
    const err = await jp.getItems(['B000000001']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamAuthError);
    expect((err as UpstreamAuthError).reason).toBe('InvalidToken');
    expect(a.stats().tokens.issued).toBe(2);
    expect(totalCalls(b)).toBe(2);
  });

  it('a revoked credential (401 on every call) fails after one renewal', async () => {
    const h = await harness({ SIMULATOR_FAULTS: '{"invalidTokenRate":1}' });
    const err = await h
      .port('US')
      .getItems(['B000000001'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamAuthError);
    expect(h.sim.stats().tokens.issued).toBe(2);
    expect(h.sim.stats().countries.US?.getItems?.calls).toBe(2);
  });

  it('a wrong secret is refused by the token endpoint: fatal, no catalog call', async () => {
    const h = await harness();
    const wrong = loadConfig(simEnv({ SIMULATOR_CLIENT_SECRET: 'not-the-secret' }));
    const jp = createUpstream(wrong, 'JP', { simulatorUrl: h.sim.url });
    open.push(jp);
    const err = await jp.getItems(['B000000001']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamAuthError);
    expect((err as UpstreamAuthError).reason).toBe('invalid_client');
    expect(totalCalls(h.sim)).toBe(0);
    expect(h.sim.stats().tokens.refused).toBe(1);
  });

  it('v2.x (Cognito) credentials work end to end: form token request, versioned Authorization', async () => {
    const h = await harness({ CREATORS_CREDENTIAL_VERSION_US: '2.1' });
    const asins = findAsins(h.sim, 'US', 'found', 3);
    const res = await h.port('US').getItems(asins);
    expect(res.items).toHaveLength(3);
    expect(h.sim.stats().tokens).toEqual({ issued: 1, refused: 0 });
  });
});
