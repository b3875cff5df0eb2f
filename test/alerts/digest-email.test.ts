import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { SmtpReceiver } from '../helpers/smtp-receiver.js';
import { until } from '../helpers/until.js';
import { changeOf, startTestDeliveryWorker, testAccount, type TestDeliveryWorker } from '../helpers/deliveries.js';
import { confirmAddress, CONFIRM_SUBJECT } from '../helpers/email-consent.js';
import { productModel } from '../../src/models/product.js';

/**
 * An e-mail endpoint's digest: one mail listing every held alert, through a real SMTP server on
 * loopback, under the same consent as every mail (an address not confirmed gets no digest either).
 */
let smtp: SmtpReceiver;
let t: TestContext;
let worker: TestDeliveryWorker;
const clock = { now: Date.UTC(2026, 11, 3, 10, 0) };

beforeAll(async () => {
  smtp = await new SmtpReceiver('mailer', 'secret').start();
  t = await createTestContext(
    {
      COUNTRIES: 'JP',
      SMTP_URL: `smtp://mailer:secret@127.0.0.1:${smtp.port}`,
      SMTP_FROM: 'Shelfwatch Alerts <alerts@shelfwatch.test>',
      DELIVERY_RETRY_SCHEDULE: '100ms',
      DELIVERY_TIMEOUT: '5s',
      RATE_LIMIT_API: '0',
      APP_URL: 'https://shelfwatch.test',
    },
    { clock: () => new Date(clock.now) },
  );
  worker = await startTestDeliveryWorker(t, 'digest-email');
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await smtp?.close();
});

async function hourlyEmailAlert(headers: Record<string, string>, asin: string, email: string) {
  const res = await t.http.post('/api/alerts').set(headers).send({ country: 'JP', channel: 'email', asin, kind: 'any_change', email });
  expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
  const patched = await t.http.patch(`/api/webhooks/${res.body.data.endpoint_id}`).set(headers).send({ delivery: 'hourly' });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  return res.body.data as { id: string; endpoint_id: string };
}

describe('an e-mail digest', () => {
  it('is one mail listing every alert of the hour, newest first, titles escaped', async () => {
    const a = await testAccount(t, 'digest-mail@example.com');
    const asin = 'B0MAILDIG1';
    await hourlyEmailAlert(a.headers, asin, 'reader@example.com');
    await confirmAddress(t, smtp, 'reader@example.com');
    await productModel(t.ctx.mongo).updateOne({ country: 'JP', asin }, { $set: { title: 'Kettle <b>1.2 L</b> & more', url: null } });
    for (const [minute, price] of [
      [5, 1_900],
      [20, 1_800],
      [40, 1_700],
    ] as const) {
      clock.now = Date.UTC(2026, 11, 3, 10, minute);
      await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: price + 100 }, { price })]);
    }
    clock.now = Date.UTC(2026, 11, 3, 11, 0);
    expect(await t.ctx.digests.flush()).toBe(1);
    const mails = (await smtp.waitFor('reader@example.com', 2)).filter((m) => m.headers.subject !== CONFIRM_SUBJECT);
    expect(mails).toHaveLength(1);
    const [mail] = mails;
    expect(mail!.headers.subject).toBe('shelfwatch: 3 alerts since the last digest (2026-12-03 11:00:00)');
    expect(mail!.headers['list-unsubscribe']).toMatch(/^<https:\/\/shelfwatch\.test\/email\/unsubscribe\//);
    expect(mail!.html).not.toContain('<b>1.2 L</b>');
    expect(mail!.html).toContain('&lt;b&gt;1.2 L&lt;/b&gt; &amp; more');
    const prices = [...mail!.text.matchAll(/→ ￥([\d,]+)/g)].map((m) => m[1]);
    expect(prices).toEqual(['1,700', '1,800', '1,900']);
  });

  it('is not sent to an address its owner has not confirmed, and says why', async () => {
    const a = await testAccount(t, 'digest-unconfirmed@example.com');
    const asin = 'B0MAILDIG2';
    const alert = await hourlyEmailAlert(a.headers, asin, 'stranger@example.com');
    clock.now = Date.UTC(2026, 11, 3, 12, 10);
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 500 }, { price: 400 })]);
    clock.now = Date.UTC(2026, 11, 3, 13, 0);
    expect(await t.ctx.digests.flush()).toBe(1);
    const failed = await until('the digest ended unsent', async () => {
      const res = await t.http.get('/api/deliveries?status=failed').set(a.headers);
      return res.body.data[0] as { endpoint_id: string; last_error: string } | undefined;
    });
    expect(failed.endpoint_id).toBe(alert.endpoint_id);
    expect(failed.last_error).toMatch(/^not sent: /);
    expect(smtp.received.filter((m) => m.to.includes('stranger@example.com') && m.headers.subject !== CONFIRM_SUBJECT)).toHaveLength(0);
  });
});
