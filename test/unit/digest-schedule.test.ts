import { describe, expect, it } from 'vitest';
import { DateTime } from 'luxon';
import { dueAt, holds, inQuietHours, nextLocalTime } from '../../src/alerts/deliveries/digest-schedule.js';
import { digestRequest, digestEmail, type DigestMessage } from '../../src/alerts/deliveries/channels/digest.js';
import { alertMessage } from '../../src/alerts/deliveries/channels/message.js';
import type { DigestSettings } from '../../src/alerts/endpoints/digest-settings.js';

/** When held deliveries go, in the account's zone (daylight saving and zones off the hour included), and how a digest reads. */
const at = (iso: string, zone: string) => DateTime.fromISO(iso, { zone }).toJSDate();
const text = (d: Date, zone: string) => DateTime.fromJSDate(d, { zone }).toFormat('yyyy-MM-dd HH:mm');
const settings = (s: Partial<DigestSettings>): DigestSettings => ({ delivery: 'instant', digest_at: null, quiet_hours: null, ...s });

describe('the digest schedule', () => {
  it('an hourly digest goes at the next hour of the zone, a zone off the hour included', () => {
    expect(text(dueAt(settings({ delivery: 'hourly' }), 'Asia/Tokyo', at('2026-11-24T09:10', 'Asia/Tokyo')), 'Asia/Tokyo')).toBe(
      '2026-11-24 10:00',
    );
    const kolkata = dueAt(settings({ delivery: 'hourly' }), 'Asia/Kolkata', at('2026-11-24T09:59', 'Asia/Kolkata'));
    expect(text(kolkata, 'Asia/Kolkata')).toBe('2026-11-24 10:00');
    expect(kolkata.toISOString()).toBe('2026-11-24T04:30:00.000Z');
  });

  it('a daily digest goes at its local time, today or tomorrow, across a clock change', () => {
    const daily = settings({ delivery: 'daily', digest_at: '09:30' });
    expect(text(dueAt(daily, 'Europe/Berlin', at('2026-11-24T09:29', 'Europe/Berlin')), 'Europe/Berlin')).toBe('2026-11-24 09:30');
    expect(text(dueAt(daily, 'Europe/Berlin', at('2026-11-24T09:30', 'Europe/Berlin')), 'Europe/Berlin')).toBe('2026-11-25 09:30');
    // The night of 28 to 29 March 2026 is 23 hours long in Berlin: still 09:30 local.
    const spring = dueAt(daily, 'Europe/Berlin', at('2026-03-28T12:00', 'Europe/Berlin'));
    expect(text(spring, 'Europe/Berlin')).toBe('2026-03-29 09:30');
    expect(spring.toISOString()).toBe('2026-03-29T07:30:00.000Z');
  });

  it('quiet hours hold what falls in them (start included, end excluded) until they end, across midnight', () => {
    const quiet = { start: '22:00', end: '07:00' };
    expect(inQuietHours(quiet, 'UTC', at('2026-11-24T22:00', 'UTC'))).toBe(true);
    expect(inQuietHours(quiet, 'UTC', at('2026-11-24T06:59', 'UTC'))).toBe(true);
    expect(inQuietHours(quiet, 'UTC', at('2026-11-24T07:00', 'UTC'))).toBe(false);
    expect(inQuietHours({ start: '12:00', end: '13:00' }, 'UTC', at('2026-11-24T13:00', 'UTC'))).toBe(false);
    const instant = settings({ quiet_hours: quiet });
    expect(holds(instant, 'UTC', at('2026-11-24T12:00', 'UTC'))).toBe(false);
    expect(holds(instant, 'UTC', at('2026-11-24T23:00', 'UTC'))).toBe(true);
    expect(text(dueAt(instant, 'UTC', at('2026-11-24T23:00', 'UTC')), 'UTC')).toBe('2026-11-25 07:00');
    // An hour that closes at the quiet hours' start waits for their end.
    expect(text(dueAt(settings({ delivery: 'hourly', quiet_hours: quiet }), 'UTC', at('2026-11-24T21:10', 'UTC')), 'UTC')).toBe(
      '2026-11-25 07:00',
    );
    expect(text(nextLocalTime('07:00', 'UTC', at('2026-11-24T07:00', 'UTC')), 'UTC')).toBe('2026-11-25 07:00');
  });
});

describe('a digest to a person', () => {
  const title = '<!channel> *Kettle* @everyone [x](https://evil.example) & <b>';
  const item = {
    endpoint_id: '6743a1b2c3d4e5f6a7b8c9d0',
    user_id: '6743a1b2c3d4e5f6a7b8c9d1',
    alerts: [{ id: '6743a1b2c3d4e5f6a7b8c9d2', kind: 'price_drop' as const }],
    asin: 'B0D1234567',
    country: 'JP' as const,
    before: { at: 0, price: 1980, currency: 'JPY', availability: 'in_stock' as const, buybox: true, rank: null },
    after: { at: 3_600_000, price: 1780, currency: 'JPY', availability: 'in_stock' as const, buybox: true, rank: null },
  };
  const m = alertMessage(item, { title, url: null }, 'UTC');
  const digest: DigestMessage = { heading: '2 alerts since the last digest', at: '2026-11-25 07:00:00', alerts: [m, m] };

  it('escapes the title as each channel reads it, and pings no one', () => {
    const slack = JSON.stringify(digestRequest(digest, { channel: 'slack', url: 'https://hooks.slack.com/x' }, '').request.body);
    expect(slack).not.toContain('<!channel>');
    expect(slack).toContain('&lt;!channel&gt;');
    const discord = digestRequest(digest, { channel: 'discord', url: 'https://discord.com/api/webhooks/1/x' }, '').request.body as {
      content: string;
      allowed_mentions: unknown;
    };
    expect(discord.content).toContain('\\*Kettle\\*');
    expect(discord.content).toContain('\\[x\\]\\(https\\://evil.example\\)');
    expect(discord.allowed_mentions).toEqual({ parse: [] });
    const telegram = digestRequest(digest, { channel: 'telegram', botToken: '1:AA', chatId: '-100' }, 'https://api.telegram.org').request
      .body as { text: string };
    expect(telegram.text).not.toContain('<b>Kettle');
    expect(telegram.text).toContain('&lt;b&gt;');
    expect(telegram.text.split('\n')).toHaveLength(3);
    const mail = digestEmail(digest);
    expect(mail.html).not.toContain('<!channel>');
    expect(mail.subject).toBe('shelfwatch: 2 alerts since the last digest (2026-11-25 07:00:00)');
  });
});
