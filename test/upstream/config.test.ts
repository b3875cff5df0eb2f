import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import { configProblems } from '../helpers/config.js';

const problems = configProblems;

describe('upstream configuration', () => {
  it('defaults: the simulator, JP on credential 3.3 and US on 3.1 with their token endpoints', () => {
    const { upstream, countries } = loadConfig({});
    expect(countries).toEqual(['JP', 'US']);
    expect(upstream.kind).toBe('simulator');
    expect(upstream.apiUrl).toBe('https://creatorsapi.amazon');
    expect(upstream.countries.JP).toMatchObject({
      marketplace: 'www.amazon.co.jp',
      credentialVersion: { version: '3.3', tokenUrl: 'https://api.amazon.co.jp/auth/o2/token', scope: 'creatorsapi::default' },
    });
    expect(upstream.countries.US).toMatchObject({
      marketplace: 'www.amazon.com',
      credentialVersion: { version: '3.1', tokenUrl: 'https://api.amazon.com/auth/o2/token' },
    });
    expect(upstream.simulator).toMatchObject({
      seed: 'shelfwatch',
      quota: { perSecond: 1, perDay: 8640 },
      notFoundRate: 0.05,
      notAccessibleRate: 0.01,
    });
  });

  it('UPSTREAM=creators names every missing credential of every country in COUNTRIES', () => {
    expect(problems({ UPSTREAM: 'creators' }).map((p) => p.split(' ')[0])).toEqual([
      'CREATORS_CREDENTIAL_ID_JP',
      'CREATORS_CREDENTIAL_SECRET_JP',
      'CREATORS_PARTNER_TAG_JP',
      'CREATORS_CREDENTIAL_ID_US',
      'CREATORS_CREDENTIAL_SECRET_US',
      'CREATORS_PARTNER_TAG_US',
    ]);
    expect(problems({ UPSTREAM: 'creators', COUNTRIES: 'JP' })).toHaveLength(3);
  });

  it('a complete creators configuration loads, with per-country overrides', () => {
    const { upstream } = loadConfig({
      UPSTREAM: 'creators',
      COUNTRIES: 'US',
      CREATORS_API_URL: 'https://proxy.example/',
      CREATORS_CREDENTIAL_ID_US: 'id',
      CREATORS_CREDENTIAL_SECRET_US: 's3cret',
      CREATORS_PARTNER_TAG_US: 'tag-20',
      CREATORS_CREDENTIAL_VERSION_US: '2.1',
      CREATORS_TOKEN_URL_US: 'https://auth.example/token',
    });
    expect(upstream.apiUrl).toBe('https://proxy.example');
    expect(upstream.countries.US).toMatchObject({
      credentialId: 'id',
      credentialSecret: 's3cret',
      partnerTag: 'tag-20',
      tokenUrl: 'https://auth.example/token',
      credentialVersion: { flavour: 'cognito' },
    });
    expect(upstream.countries.JP).toBeUndefined();
  });

  it('bad values give one line each, and secrets are never echoed', () => {
    const lines = problems({
      UPSTREAM: 'amazon',
      CREATORS_CREDENTIAL_VERSION_JP: '4.0',
      CREATORS_TOKEN_URL_US: 'ftp://x',
      SIMULATOR_FAULTS: '{"errorRate":2}',
      SIMULATOR_NOT_FOUND_RATE: 'lots',
      SIMULATOR_CLIENT_SECRET: '',
      PORT: 'x',
    });
    expect(lines.map((l) => l.split(' ')[0]).sort()).toEqual([
      'CREATORS_CREDENTIAL_VERSION_JP',
      'CREATORS_TOKEN_URL_US',
      'PORT',
      'SIMULATOR_FAULTS',
      'SIMULATOR_NOT_FOUND_RATE',
      'UPSTREAM',
    ]);
    expect(lines.find((l) => l.startsWith('SIMULATOR_FAULTS'))).toMatch(/errorRate/);
    expect(problems({ SIMULATOR_NOT_FOUND_RATE: '0.6', SIMULATOR_NOT_ACCESSIBLE_RATE: '0.5' })).toEqual([
      'SIMULATOR_NOT_FOUND_RATE and SIMULATOR_NOT_ACCESSIBLE_RATE must not add up to more than 1',
    ]);
    const secret = problems({ UPSTREAM: 'creators', COUNTRIES: 'JP', CREATORS_CREDENTIAL_SECRET_JP: 'hunter2-very-secret' });
    expect(secret.join('\n')).not.toContain('hunter2');
  });

  // The credentials and the bearer tokens travel to these URLs: in clear text only to this machine.
  it.each([
    ['CREATORS_API_URL', 'http://proxy.example'],
    ['CREATORS_API_URL', 'http://10.0.0.5:8080'],
    ['CREATORS_API_URL', 'http://localhost.example.com'],
    ['CREATORS_API_URL', 'http://[::2]:4000'],
    ['CREATORS_TOKEN_URL_JP', 'http://auth.example/token'],
    ['CREATORS_TOKEN_URL_US', 'http://128.0.0.1/token'],
  ])('refuses %s=%s: https only, except on loopback', (name, value) => {
    expect(problems({ [name]: value })).toEqual([expect.stringMatching(new RegExp(`^${name} must be an https URL.*loopback`))]);
  });

  it.each(['http://127.0.0.1:4000', 'http://127.3.2.1', 'http://localhost:4000/', 'http://[::1]:4000', 'https://proxy.example'])(
    'accepts %s for the Creators URLs',
    (value) => {
      const { upstream } = loadConfig({ CREATORS_API_URL: value, CREATORS_TOKEN_URL_JP: `${value.replace(/\/$/, '')}/token` });
      expect(upstream.apiUrl).toBe(value.replace(/\/$/, ''));
      expect(upstream.countries.JP?.tokenUrl).toBe(`${value.replace(/\/$/, '')}/token`);
    },
  );
});
