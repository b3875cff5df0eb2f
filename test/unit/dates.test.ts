import { describe, expect, it } from 'vitest';
import { formatDateTime, formatNullableDateTime } from '../../src/dates.js';

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
