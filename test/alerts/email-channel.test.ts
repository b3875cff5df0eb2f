import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { SmtpReceiver } from '../helpers/smtp-receiver.js';
import { until } from '../helpers/until.js';
import { configProblems } from '../helpers/config.js';
import { changeOf, deliveriesOf, startTestDeliveryWorker, testAccount, type TestDeliveryWorker } from '../helpers/deliveries.js';
import { productModel } from '../../src/models/product.js';
import { loadConfig } from '../../config/env.js';
import { confirmAddress, CONFIRM_SUBJECT } from '../helpers/email-consent.js';

/**
 * E-mail alerts through a real SMTP server on loopback (smtp-server), by the real DeliveryQueue and
 * delivery worker: one message per change with the product and the change in its subject and
 * body, a Message-ID that a retry repeats, the test button, and a clear 422 without SMTP. Each
 * address is confirmed by its owner first (test/alerts/email-consent.test.ts covers the consent).
 */
const SMTP_USER = 'shelf-mailer';
const SMTP_PASSWORD = 'smtp-pass/with:odd@chars';
let smtp: SmtpReceiver;
let t: TestContext;
let worker: TestDeliveryWorker;

beforeAll(async () => {
  smtp = await new SmtpReceiver(SMTP_USER, SMTP_PASSWORD).start();
  t = await createTestContext({
    COUNTRIES: 'JP',
    SMTP_URL: `smtp://${SMTP_USER}:${encodeURIComponent(SMTP_PASSWORD)}@127.0.0.1:${smtp.port}`,
    SMTP_FROM: 'Shelfwatch Alerts <alerts@shelfwatch.test>',
    DELIVERY_RETRY_SCHEDULE: '200ms,200ms,200ms',
    DELIVERY_TIMEOUT: '5s',
    RATE_LIMIT_API: '0',
    APP_URL: 'https://shelfwatch.test',
  });
  worker = await startTestDeliveryWorker(t, 'email-channel');
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await smtp?.close();
});

async function createEmailAlert(headers: Record<string, string>, body: Record<string, unknown>) {
  const res = await t.http
    .post('/api/alerts')
    .set(headers)
    .send({ country: 'JP', channel: 'email', ...body });
  expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
  return res.body.data as {
    id: string;
    email_status: string | null;
    endpoint_id: string;
    channel: string;
    email: string | null;
    webhook_url: string | null;
    secret: string | null;
  };
}

describe('an e-mail alert', () => {
  it('delivers one message per change, naming the product and the change in its subject and body', async () => {
    const a = await testAccount(t, 'mail-owner@example.com');
    const asin = 'B0MAILDRP1';
    const alert = await createEmailAlert(a.headers, { asin, kind: 'price_drop', percent: 5, email: ' Buyer@Example.COM ' });
    expect(alert).toMatchObject({ channel: 'email', email: 'Buyer@example.com', webhook_url: null, secret: null, email_status: 'pending' });
    await confirmAddress(t, smtp, 'Buyer@example.com');
    const endpoint = (await t.http.get(`/api/webhooks/${alert.endpoint_id}`).set(a.headers)).body.data;
    expect(endpoint).toMatchObject({ channel: 'email', url: 'mailto:Buyer@example.com', state: 'active' });
    // The same address however written is the same endpoint.
    const again = await createEmailAlert(a.headers, { asin, kind: 'any_change', email: 'Buyer@EXAMPLE.com' });
    expect(again.endpoint_id).toBe(alert.endpoint_id);
    expect(again.email_status).toBe('confirmed');
    const title = 'Kettle <1.2 L> & "more"';
    await productModel(t.ctx.mongo).updateOne({ country: 'JP', asin }, { $set: { title, url: null } });

    expect(await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 1_980 }, { price: 1_780 })])).toBe(1);
    const mail = (await smtp.waitFor('Buyer@example.com', 2)).find((m) => m.headers.subject !== CONFIRM_SUBJECT);
    const [rec] = await until('delivered', async () => {
      const list = await deliveriesOf(t, a.headers, alert.id);
      return list[0]?.status === 'delivered' ? list : undefined;
    });
    expect(rec).toMatchObject({ attempts: 1, response_code: 250, last_error: null });
    // Both alerts fired; one change is one message.
    expect((await deliveriesOf(t, a.headers, again.id)).map((d) => d.id)).toEqual([rec!.id]);
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.received.filter((m) => m.to.includes('Buyer@example.com') && m.headers.subject !== CONFIRM_SUBJECT)).toHaveLength(1);

    expect(mail).toMatchObject({ from: 'alerts@shelfwatch.test', to: ['Buyer@example.com'], user: SMTP_USER, code: 250 });
    expect(mail!.headers.subject).toBe(`Price drop, Change: ${title} (JP) ￥1,980 → ￥1,780 (−10.1%)`);
    expect(mail!.headers.from).toBe('Shelfwatch Alerts <alerts@shelfwatch.test>');
    expect(mail!.headers['message-id']).toBe(`<${rec!.id}@shelfwatch.test>`);
    expect(mail!.headers['auto-submitted']).toBe('auto-generated');
    expect(mail!.headers['list-unsubscribe']).toMatch(/^<https:\/\/shelfwatch\.test\/email\/unsubscribe\/[^>]+>$/);
    expect(mail!.headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');
    expect(mail!.text).toContain(`Price drop, Change: ${title}`);
    expect(mail!.text).toMatch(/Change: +￥1,980 → ￥1,780 \(−10\.1%\)/);
    expect(mail!.text).toContain(`ASIN:        ${asin}`);
    expect(mail!.text).toContain(`https://www.amazon.co.jp/dp/${asin}`);
    expect(mail!.html).toContain('<a href="https://www.amazon.co.jp/dp/B0MAILDRP1">Kettle &lt;1.2 L&gt; &amp; &quot;more&quot;</a>');
    expect(mail!.html).toContain('￥1,980 → ￥1,780 (−10.1%)');
    expect(mail!.html).not.toContain(title);
  });

  it('sends the same Message-ID again when the server refused the first attempt', async () => {
    const a = await testAccount(t, 'mail-retry@example.com');
    const asin = 'B0MAILRTRY';
    const alert = await createEmailAlert(a.headers, { asin, kind: 'back_in_stock', email: 'retry@example.com' });
    await confirmAddress(t, smtp, 'retry@example.com');
    smtp.refuse(451);
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: null, availability: 'out_of_stock' }, { price: 3_000 })]);
    const mails = (await smtp.waitFor('retry@example.com', 3)).filter((m) => m.headers.subject !== CONFIRM_SUBJECT);
    expect(mails.map((m) => m.code)).toEqual([451, 250]);
    const [first, second] = mails;
    expect(second!.headers['message-id']).toBe(first!.headers['message-id']);
    expect(second!.headers.subject).toBe(first!.headers.subject);
    expect(second!.headers.subject).toBe(`Back in stock: ${asin} (JP) out of stock → ￥3,000`);
    const [rec] = await until('delivered', async () => {
      const list = await deliveriesOf(t, a.headers, alert.id);
      return list[0]?.status === 'delivered' ? list : undefined;
    });
    expect(rec).toMatchObject({ attempts: 2, response_code: 250 });
    expect(first!.headers['message-id']).toBe(`<${rec!.id}@shelfwatch.test>`);
  });

  it('records what the server said when it keeps deferring, and fails like a webhook after the last retry', async () => {
    const a = await testAccount(t, 'mail-refused@example.com');
    const asin = 'B0MAILFAIL';
    const alert = await createEmailAlert(a.headers, { asin, kind: 'any_change', email: 'refused@example.com' });
    await confirmAddress(t, smtp, 'refused@example.com');
    smtp.refuse(451, 451, 451, 451);
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 1 }, { rank: 2 })]);
    await smtp.waitFor('refused@example.com', 5);
    const [rec] = await until('failed', async () => {
      const list = await deliveriesOf(t, a.headers, alert.id);
      return list[0]?.status === 'failed' ? list : undefined;
    });
    expect(rec).toMatchObject({ attempts: 4, response_code: 451 });
    expect(rec!.last_error).toMatch(/^the SMTP server did not take the e-mail: 451 /);
    expect((await t.http.get(`/api/webhooks/${alert.endpoint_id}`).set(a.headers)).body.data.state).toBe('failing');
  });

  it('the test button sends a sample marked [Test] and answers the server’s reply, recording nothing', async () => {
    const a = await testAccount(t, 'mail-test@example.com');
    const alert = await createEmailAlert(a.headers, { asin: 'B0MAILTEST', kind: 'price_below', price: 5_000, email: 'tester@example.com' });
    await confirmAddress(t, smtp, 'tester@example.com');
    const res = await t.http.post(`/api/alerts/${alert.id}/test`).set(a.headers);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      outcome: 'delivered',
      status: 250,
      ok: true,
      error: null,
      webhook_id: expect.stringMatching(/^test\./),
    });
    const mail = (await smtp.waitFor('tester@example.com', 2)).find((m) => m.headers.subject !== CONFIRM_SUBJECT);
    expect(mail!.headers.subject).toBe('[Test] Price below ￥5,000: B0MAILTEST (JP) ￥5,100 → ￥4,900 (−3.9%)');
    expect(mail!.headers['message-id']).toBe(`<${res.body.data.webhook_id}@shelfwatch.test>`);
    expect(mail!.text).toContain("This is a test from the alert's Test button");
    expect(await deliveriesOf(t, a.headers, alert.id)).toEqual([]);

    smtp.refuse(554);
    const refused = await t.http.post(`/api/alerts/${alert.id}/test`).set(a.headers);
    expect(refused.body.data).toMatchObject({
      outcome: 'refused',
      status: 554,
      ok: false,
      error: 'the SMTP server refused the e-mail (554)',
    });
    // The server's reply text is not the caller's to read.
    expect(JSON.stringify(refused.body)).not.toContain('Mailbox busy');
  });

  it('needs an address, and takes no webhook_url', async () => {
    const a = await testAccount(t, 'mail-fields@example.com');
    const post = (body: Record<string, unknown>) =>
      t.http
        .post('/api/alerts')
        .set(a.headers)
        .send({ asin: 'B0MAILFLDS', country: 'JP', kind: 'any_change', channel: 'email', ...body });
    const missing = await post({});
    expect(missing.status).toBe(422);
    expect(missing.body.errors.email[0]).toBe('The email field is required for channel email.');
    const bad = await post({ email: 'not an address' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.email[0]).toBe('The email field must be a valid e-mail address.');
    const both = await post({ email: 'x@example.com', webhook_url: 'https://93.184.216.34/x' });
    expect(both.status).toBe(422);
    expect(both.body.errors.webhook_url[0]).toMatch(/not for channel email/);
  });
});

describe('without SMTP', () => {
  it('refuses e-mail alerts with a clear 422, and takes the other channels as before', async () => {
    const bare = await createTestContext({ COUNTRIES: 'JP', RATE_LIMIT_API: '0' });
    try {
      expect(bare.config.alerts.smtp).toBeNull();
      const a = await testAccount(bare, 'no-smtp@example.com');
      const res = await bare.http
        .post('/api/alerts')
        .set(a.headers)
        .send({ asin: 'B0MAILNONE', country: 'JP', kind: 'any_change', channel: 'email', email: 'someone@example.com' });
      expect(res.status).toBe(422);
      expect(res.body.errors.channel[0]).toMatch(/E-mail alerts are off on this server.*SMTP_URL and SMTP_FROM/);
      expect((await bare.http.get('/api/alerts').set(a.headers)).body.meta.total).toBe(0);
      const webhook = await bare.http
        .post('/api/alerts')
        .set(a.headers)
        .send({ asin: 'B0MAILNONE', country: 'JP', kind: 'any_change', webhook_url: 'https://93.184.216.34/hook' });
      expect(webhook.status).toBe(201);
      expect(webhook.body.data).toMatchObject({ channel: 'webhook', webhook_url: 'https://93.184.216.34/hook', email: null });
      expect(webhook.body.data.secret).toMatch(/^whsec_/);
    } finally {
      await bare.close();
    }
  });
});

describe('SMTP_URL and SMTP_FROM', () => {
  it('are read from smtp(s):// URLs with the login percent-encoded', () => {
    const base = { NODE_ENV: 'test', APP_URL: 'https://shelfwatch.example' };
    expect(loadConfig({ ...base, SMTP_URL: 'smtps://u%40x:p%2Fw@mail.example.com', SMTP_FROM: 'a@b.example' }).alerts.smtp).toEqual({
      host: 'mail.example.com',
      port: 465,
      secure: true,
      requireTls: false,
      auth: { user: 'u@x', pass: 'p/w' },
      from: { name: undefined, address: 'a@b.example' },
    });
    expect(loadConfig({ ...base, SMTP_URL: 'smtp://relay.internal', SMTP_FROM: '"Shelf Watch" <a@b.example>' }).alerts.smtp).toMatchObject({
      port: 587,
      secure: false,
      requireTls: true,
      auth: undefined,
      from: { name: 'Shelf Watch', address: 'a@b.example' },
    });
  });

  it.each([
    [{ SMTP_URL: 'http://mailer:smtpPw77@mail:587', SMTP_FROM: 'a@b.example' }, 'SMTP_URL', /smtp:\/\/ or smtps:\/\//],
    [{ SMTP_URL: 'smtp://mailer:smtpPw77@mail:99999', SMTP_FROM: 'a@b.example' }, 'SMTP_URL', /smtp:\/\/ or smtps:\/\//],
    [{ SMTP_URL: 'smtp://mailer:smtpPw77@mail:587/path', SMTP_FROM: 'a@b.example' }, 'SMTP_URL', /path, query or fragment/],
    [{ SMTP_URL: 'smtp://mailer@mail:587', SMTP_FROM: 'a@b.example' }, 'SMTP_URL', /both a user name and a password/],
    [{ SMTP_URL: 'smtp://mailer:smtpPw77@mail:587' }, 'SMTP_URL', /set together/],
    [{ SMTP_URL: 'smtp://mailer:smtpPw77@mail:587', SMTP_FROM: 'nobody' }, 'SMTP_FROM', /e-mail address/],
  ])('%j is refused, naming the variable and never the password', (env, name, message) => {
    const problems = configProblems({ NODE_ENV: 'test', ...env });
    const line = problems.find((p) => p.startsWith(`${name} `));
    expect(line, JSON.stringify(problems)).toMatch(message);
    expect(problems.join('\n')).not.toContain('smtpPw77');
  });
});
