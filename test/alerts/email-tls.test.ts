import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SmtpReceiver } from '../helpers/smtp-receiver.js';
import { createTestContext } from '../helpers/context.js';
import { testAccount } from '../helpers/deliveries.js';
import { until } from '../helpers/until.js';
import { loadConfig } from '../../config/env.js';
import { requiresTls, type SmtpConfig } from '../../config/smtp.js';
import { sendEmail } from '../../src/alerts/deliveries/channels/email.js';
import { EmailDeliveryError } from '../../src/core/errors.js';

/**
 * smtp:// requires STARTTLS (nodemailer's requireTLS) except where SMTP_ALLOW_PLAINTEXT allows
 * plain text. The test server runs on loopback without STARTTLS, which the default allows; with
 * SMTP_ALLOW_PLAINTEXT=false loopback is treated as any remote host, so the refusal a remote
 * server without STARTTLS (or with its offer stripped) gets is seen here: no login is tried.
 */
const USER = 'tls-mailer';
const PASSWORD = 'tls-secret-pass';
let smtp: SmtpReceiver;

beforeAll(async () => {
  smtp = await new SmtpReceiver(USER, PASSWORD).start();
});

afterAll(async () => {
  await smtp?.close();
});

const content = { subject: 'hello', text: 'hello', html: '<p>hello</p>' };

function server(requireTls: boolean): SmtpConfig {
  return {
    host: '127.0.0.1',
    port: smtp.port,
    secure: false,
    requireTls,
    auth: { user: USER, pass: PASSWORD },
    from: { name: undefined, address: 'a@shelfwatch.test' },
  };
}

describe('SMTP_ALLOW_PLAINTEXT', () => {
  it('requires STARTTLS on smtp:// but to loopback by default; true allows any host, false none', () => {
    expect(requiresTls('mail.example.com', 'loopback')).toBe(true);
    expect(requiresTls('10.0.0.5', 'loopback')).toBe(true);
    for (const host of ['127.0.0.1', '127.9.9.9', 'localhost', '::1']) expect(requiresTls(host, 'loopback'), host).toBe(false);
    expect(requiresTls('mail.example.com', 'true')).toBe(false);
    expect(requiresTls('127.0.0.1', 'false')).toBe(true);
    const env = { NODE_ENV: 'test', APP_URL: 'https://shelfwatch.example', SMTP_FROM: 'a@b.example' };
    expect(loadConfig({ ...env, SMTP_URL: 'smtp://u:p@mail.example.com' }).alerts.smtp?.requireTls).toBe(true);
    expect(loadConfig({ ...env, SMTP_URL: 'smtp://u:p@127.0.0.1:2525' }).alerts.smtp?.requireTls).toBe(false);
    expect(loadConfig({ ...env, SMTP_URL: 'smtp://u:p@relay.lan', SMTP_ALLOW_PLAINTEXT: 'true' }).alerts.smtp?.requireTls).toBe(false);
    expect(loadConfig({ ...env, SMTP_URL: 'smtps://u:p@mail.example.com' }).alerts.smtp?.requireTls).toBe(false);
  });

  it('refuses to log in or send over plain text when TLS is required, and does both when allowed', async () => {
    const before = smtp.logins.length;
    const refused = await sendEmail(server(true), { to: 'x@example.com', deliveryId: 'tls.1', content, timeoutMs: 5_000 }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(EmailDeliveryError);
    // The server answered STARTTLS with "command not recognized": nodemailer's TLS error, and not the address's fault.
    expect((refused as EmailDeliveryError).message).toMatch(/\(ETLS\)$/);
    expect((refused as EmailDeliveryError).permanent).toBe(false);
    expect(smtp.logins.length).toBe(before);
    expect(smtp.received.filter((m) => m.to.includes('x@example.com'))).toEqual([]);

    const sent = await sendEmail(server(false), { to: 'x@example.com', deliveryId: 'tls.2', content, timeoutMs: 5_000 });
    expect(sent.verdict).toBe('ok');
    expect(smtp.logins.slice(before)).toEqual([USER]);
  });

  it('false: the confirmation mail of a new alert is not sent over loopback without STARTTLS', async () => {
    const t = await createTestContext({
      COUNTRIES: 'JP',
      SMTP_URL: `smtp://${USER}:${PASSWORD}@127.0.0.1:${smtp.port}`,
      SMTP_FROM: 'alerts@shelfwatch.test',
      SMTP_ALLOW_PLAINTEXT: 'false',
      APP_URL: 'https://shelfwatch.test',
      RATE_LIMIT_API: '0',
    });
    try {
      const before = smtp.logins.length;
      const a = await testAccount(t, 'tls-owner@example.com');
      const res = await t.http
        .post('/api/alerts')
        .set(a.headers)
        .send({ asin: 'B0TLSCHECK', country: 'JP', kind: 'any_change', channel: 'email', email: 'tls@example.com' });
      expect(res.status).toBe(201);
      await t.ctx.emailAddresses.settled();
      await until('the failure logged', async () => t.logs.text.includes('confirmation mail not sent'));
      expect(smtp.logins.length).toBe(before);
      expect(smtp.received.filter((m) => m.to.includes('tls@example.com'))).toEqual([]);
      expect(t.logs.text).not.toContain(PASSWORD);
    } finally {
      await t.close();
    }
  });
});
