import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { COUNTRY_CODES } from '../../config/countries.js';
import { countryTag, keyPattern, sharedTag } from '../../src/db/redis-keys.js';

/** The masters of a 3-master cluster as `redis-cli --cluster create` splits the slots. */
const masterOf = (slot: number): number => (slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2);

describe('Redis key tags', () => {
  it.each(['shelfwatch', 'swb_scale_mwxhv6it_1a311f', 'a'])(
    'spread the 21 countries 7 / 7 / 7 over a 3-master cluster, whatever the prefix (%s)',
    (prefix) => {
      const slots = COUNTRY_CODES.map((c) => calculateSlot(countryTag(prefix, c)));
      expect(new Set(slots).size).toBe(COUNTRY_CODES.length);
      const perMaster = [0, 0, 0];
      for (const s of slots) perMaster[masterOf(s)]!++;
      expect(perMaster).toEqual([7, 7, 7]);
      // Each country in its own run of the slots, in COUNTRY_CODES's order.
      expect(slots).toEqual([...slots].sort((a, b) => a - b));
    },
  );

  it('are the same in every process and start with the prefix, as the key pattern finds them', () => {
    expect(countryTag('shelfwatch', 'JP')).toBe('{shelfwatch:JP}');
    expect(countryTag('shelfwatch', 'SG')).toMatch(/^\{shelfwatch:SG(:\d+)?\}$/);
    expect(countryTag('p', 'DE')).toBe(countryTag('p', 'DE'));
    expect(sharedTag('p', 'accounts')).toBe('{p:accounts}');
    for (const tag of [countryTag('p', 'DE'), sharedTag('p', 'locks')]) expect(tag.startsWith(keyPattern('p').slice(0, -1))).toBe(true);
  });
});
