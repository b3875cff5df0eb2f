import { describe, expect, it } from 'vitest';
import { COUNTRY_CODES } from '../../config/countries.js';
import { credentialVersion, REGION_COUNTRIES, regionOf } from '../../config/creators-api.js';
import { loadConfig } from '../../config/env.js';
import { MARKETPLACES, partnerTagSuffix } from '../../config/marketplaces.js';
import { toMinorUnits } from '../../src/upstream/creators/normalize.js';
import { countryOfMarketplace, currencyDigits } from '../../src/upstream/marketplaces.js';
import { configProblems } from '../helpers/config.js';

describe('marketplaces', () => {
  it('knows the 21 Creators API marketplaces, JP and US first', () => {
    expect(COUNTRY_CODES).toHaveLength(21);
    expect(COUNTRY_CODES.slice(0, 2)).toEqual(['JP', 'US']);
    expect(new Set(COUNTRY_CODES).size).toBe(21);
  });

  it('gives every country a marketplace of its own, on a credential version whose region serves it', () => {
    expect(Object.keys(MARKETPLACES).sort()).toEqual([...COUNTRY_CODES].sort());
    const hosts = new Set<string>();
    for (const cc of COUNTRY_CODES) {
      const m = MARKETPLACES[cc];
      expect(m.country).toBe(cc);
      expect(m.host).toMatch(/^www\.amazon\.[a-z.]+$/);
      hosts.add(m.host);
      expect(countryOfMarketplace(m.host)).toBe(cc);
      expect(m.currency).toMatch(/^[A-Z]{3}$/);
      expect(m.language).toMatch(/^[a-z]{2}_[A-Z]{2}$/);
      const version = credentialVersion(m.defaultCredentialVersion);
      expect(version, `${cc}'s default credential version`).toBeDefined();
      expect(REGION_COUNTRIES[version!.region], `${cc} in region ${version!.region}`).toContain(cc);
    }
    expect(hosts.size).toBe(COUNTRY_CODES.length);
  });

  it('puts every country in exactly one region group', () => {
    const grouped = Object.values(REGION_COUNTRIES).flat();
    expect([...grouped].sort()).toEqual([...COUNTRY_CODES].sort());
    expect(regionOf('UK')).toBe('EU');
    expect(regionOf('IN')).toBe('EU');
    expect(regionOf('BR')).toBe('NA');
    expect(regionOf('SG')).toBe('FE');
  });

  it('suffixes partner tags by region: -20 NA, -21 EU, -22 FE', () => {
    expect(Object.fromEntries(COUNTRY_CODES.map((cc) => [cc, partnerTagSuffix(cc)]))).toMatchObject({
      JP: '-22',
      US: '-20',
      CA: '-20',
      UK: '-21',
      DE: '-21',
      FR: '-21',
      IT: '-21',
      ES: '-21',
      IN: '-21',
      AU: '-22',
    });
  });

  it('stores prices in minor units: whole yen, hundredths of every other currency', () => {
    for (const cc of COUNTRY_CODES) {
      const { currency } = MARKETPLACES[cc];
      expect(currencyDigits(currency), currency).toBe(currency === 'JPY' ? 0 : 2);
    }
    expect(toMinorUnits(1980, 'JPY')).toBe(1980);
    expect(toMinorUnits(19.99, 'EUR')).toBe(1999);
    expect(toMinorUnits(1234.5, 'INR')).toBe(123450);
    expect(toMinorUnits(0.29, 'SEK')).toBe(29);
  });
});

describe('countries in the configuration', () => {
  it('serves JP and US unless COUNTRIES names others', () => {
    expect(loadConfig({}).countries).toEqual(['JP', 'US']);
    expect(Object.keys(loadConfig({}).upstream.countries)).toEqual(['JP', 'US']);
  });

  it('gives a newly listed country its marketplace, credential version, simulator tag and quota override', () => {
    const c = loadConfig({ COUNTRIES: 'jp,de,au', QUOTA_RPS_DE: '2.5', QUOTA_PER_DAY_AU: '1000' });
    expect(c.countries).toEqual(['JP', 'DE', 'AU']);
    expect(c.upstream.countries.DE).toMatchObject({
      marketplace: 'www.amazon.de',
      partnerTag: 'shelfwatch-21',
      credentialVersion: { version: '3.2', region: 'EU', tokenUrl: 'https://api.amazon.co.uk/auth/o2/token' },
    });
    expect(c.upstream.countries.AU).toMatchObject({ partnerTag: 'shelfwatch-22', credentialVersion: { version: '3.3' } });
    expect(c.quota.quotas.DE).toMatchObject({ perSecond: 2.5, perDay: 8640 });
    expect(c.quota.quotas.AU).toMatchObject({ perSecond: 1, perDay: 1000 });
    expect(c.workers.countries).toEqual(['JP', 'DE', 'AU']);
  });

  it('asks for the credentials of the countries of COUNTRIES only, even when another variable is wrong', () => {
    const names = (env: Record<string, string>) => configProblems(env).map((p) => p.split(' ')[0]);
    expect(names({ UPSTREAM: 'creators', COUNTRIES: 'UK' })).toEqual([
      'CREATORS_CREDENTIAL_ID_UK',
      'CREATORS_CREDENTIAL_SECRET_UK',
      'CREATORS_PARTNER_TAG_UK',
    ]);
    expect(names({ UPSTREAM: 'creators', PORT: 'x' })).toEqual([
      'PORT',
      'CREATORS_CREDENTIAL_ID_JP',
      'CREATORS_CREDENTIAL_SECRET_JP',
      'CREATORS_PARTNER_TAG_JP',
      'CREATORS_CREDENTIAL_ID_US',
      'CREATORS_CREDENTIAL_SECRET_US',
      'CREATORS_PARTNER_TAG_US',
    ]);
  });

  it('refuses a code that is not a Creators API marketplace, GB among them', () => {
    expect(configProblems({ COUNTRIES: 'JP,GB' })).toEqual([expect.stringMatching(/^COUNTRIES must be a comma list of JP, US, CA/)]);
  });
});
