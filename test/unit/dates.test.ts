import { describe, expect, it } from 'vitest';
import { formatDateTime, formatNullableDateTime, formatWithIntl } from '../../src/core/dates.js';
import fc from 'fast-check';

describe('formatDateTime', () => {
  const d = new Date('2026-03-04T15:06:07.890Z');

  it('formats YYYY-MM-DD HH:MM:SS in the given zone', () => {
    expect(formatDateTime(d, 'UTC')).toBe('2026-03-04 15:06:07');
    expect(formatDateTime(d, 'Asia/Tokyo')).toBe('2026-03-05 00:06:07');
    expect(formatDateTime(d, 'America/New_York')).toBe('2026-03-04 10:06:07');
  });

  it('writes midnight as 00, not 24', () => {
    expect(formatDateTime(new Date('2026-01-01T00:00:00Z'), 'UTC')).toBe('2026-01-01 00:00:00');
  });

  it('passes null through', () => {
    expect(formatNullableDateTime(null, 'UTC')).toBeNull();
  });
});

describe('formatDateTime against Intl', () => {
  it('agrees with Intl for any instant from 1970 to 2100 in zones with DST, half and quarter hours', () => {
    const zones = [
      'UTC',
      'Asia/Tokyo',
      'America/New_York',
      'Europe/London',
      'America/Santiago',
      'Australia/Lord_Howe',
      'Asia/Kathmandu',
      'America/St_Johns',
      'Pacific/Chatham',
      'Africa/Monrovia',
    ];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_102_444_800_000 }), fc.constantFrom(...zones), (at, zone) => {
        expect(formatDateTime(new Date(at), zone)).toBe(formatWithIntl(new Date(at), zone));
      }),
      { numRuns: 5_000 },
    );
  });

  it('agrees with Intl on every second around DST changes, including one at 00:01 local time', () => {
    // New York, spring 2026 (07:00 UTC); St John's, autumn 2010 (00:01 local, 03:31 UTC).
    for (const [zone, change] of [
      ['America/New_York', Date.UTC(2026, 2, 8, 7, 0, 0)],
      ['America/St_Johns', Date.UTC(2010, 10, 7, 3, 31, 0)],
    ] as const) {
      for (let at = change - 1_800_000; at <= change + 1_800_000; at += 1_000) {
        expect(formatDateTime(new Date(at), zone)).toBe(formatWithIntl(new Date(at), zone));
      }
    }
  });
});
