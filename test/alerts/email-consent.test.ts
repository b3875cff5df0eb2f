import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Types } from 'mongoose';
import { createTestContext, TEST_APP_KEY, type TestContext } from '../helpers/context.js';
import { SmtpReceiver } from '../helpers/smtp-receiver.js';
import { until } from '../helpers/until.js';
import { changeOf, deliveriesOf, startTestDeliveryWorker, testAccount, type TestDeliveryWorker } from '../helpers/deliveries.js';
import {
  confirmAddress,
  confirmationMail,
  confirmationsTo,
  CONFIRM_SUBJECT,
  linkIn,
  unsubscribeHeaderPath,
} from '../helpers/email-consent.js';
import { emailAddressModel } from '../../src/models/email-address.js';
import { signLink } from '../../src/alerts/endpoints/email-links.js';
import { parseAppKey } from '../../config/app-key.js';

/**
 * E-mail only to people who said yes, against a real SMTP server on loopback (smtp-server) and the
 * real delivery worker: the confirmation mail, the link pages (a GET changes nothing), the gate on
 * deliveries and tests, one-click unsubscribe, permanent refusals and bounces, and bad links.
 */
const SMTP_USER = 'consent-mailer';
const SMTP_PASSWORD = 'consent-pass';
const APP_URL = 'https://shelfwatch.test';
let smtp: SmtpReceiver;
let t: TestContext;
let worker: TestDeliveryWorker;

beforeAll(async () => {
  smtp = await new SmtpReceiver(SMTP_USER, SMTP_PASSWORD).start();
  t = await createTestContext({
    COUNTRIES: 'JP',
    SMTP_URL: `smtp://${SMTP_USER}:${SMTP_PASSWORD}@127.0.0.1:${smtp.port}`,
    SMTP_FROM: 'Shelfwatch <alerts@shelfwatch.test>',
    DELIVERY_RETRY_SCHEDULE: '200ms,200ms,200ms',
    DELIVERY_TIMEOUT: '5s',
    RATE_LIMIT_API: '0',
    APP_URL,
  });
  worker = await startTestDeliveryWorker(t, 'email-consent');
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await smtp?.close();
});

const alertMails = (to: string) => smtp.received.filter((m) => m.to.includes(to) && m.headers.subject !== CONFIRM_SUBJECT);

async function emailAlert(headers: Record<string, string>, asin: string, email: string): Promise<{ id: string; email_status: string }> {
  const res = await t.http.post('/api/alerts').set(headers).send({ asin, country: 'JP', kind: 'any_change', channel: 'email', email });
  expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
  return res.body.data;
}

/** The delivery's job once BullMQ has settled it (completed or failed for good); a retry would leave it delayed. */
async function settledJob(id: string): Promise<{ state: string; attemptsMade: number }> {
  return until(`job ${id} settled`, async () => {
    // The state first: a job read before it finished would carry its attempts from before.
    const state = await t.ctx.deliveryJobs.queue.getJobState(id);
    if (state !== 'completed' && state !== 'failed') return undefined;
    const job = await t.ctx.deliveryJobs.queue.getJob(id);
    return job ? { state, attemptsMade: job.attemptsMade } : undefined;
  });
}

async function statusOf(headers: Record<string, string>, id: string): Promise<string> {
  return (await t.http.get(`/api/alerts/${id}`).set(headers)).body.data.email_status;
}

/** Queues one change of `asin` and waits for its delivery record to end (delivered or failed). */
async function deliverChange(headers: Record<string, string>, alertId: string, asin: string) {
  const before = (await deliveriesOf(t, headers, alertId)).length;
  await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 1 }, { rank: 2 })]);
  return until('the delivery ended', async () => {
    const list = await deliveriesOf(t, headers, alertId);
    return list.length > before && list[0]!.status !== 'pending' ? list[0]! : undefined;
  });
}

describe('an address not confirmed', () => {
  it('gets only the confirmation mail: no alert, no test; a re-post within a day sends no second one', async () => {
    const a = await testAccount(t, 'consent-pending@example.com');
    const address = 'pending@example.com';
    const alert = await emailAlert(a.headers, 'B0CONSENT1', address);
    expect(alert.email_status).toBe('pending');

    const mail = await confirmationMail(smtp, address);
    expect(mail.headers.subject).toBe(CONFIRM_SUBJECT);
    expect(mail.text).toContain(`${APP_URL}/email/confirm/`);
    expect(mail.text).not.toContain('consent-pending@example.com');
    expect(mail.headers['list-unsubscribe']).toMatch(/^<https:\/\/shelfwatch\.test\/email\/unsubscribe\/[^>]+>$/);
    expect(mail.headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');

    const rec = await deliverChange(a.headers, alert.id, 'B0CONSENT1');
    expect(rec).toMatchObject({ status: 'failed', attempts: 0 });
    expect(rec.last_error).toMatch(/^not sent: the address is awaiting its owner's confirmation/);
    // Ended, not left to retry.
    expect(await settledJob(rec.id)).toMatchObject({ state: 'completed', attemptsMade: 1 });

    const tested = await t.http.post(`/api/alerts/${alert.id}/test`).set(a.headers);
    expect(tested.status).toBe(409);
    expect(tested.body.message).toMatch(/^No test mail was sent: the address is awaiting its owner's confirmation/);

    const again = await emailAlert(a.headers, 'B0CONSENT1', address);
    expect(again.email_status).toBe('pending');
    await emailAlert(a.headers, 'B0CONSENT9', address);
    await t.ctx.emailAddresses.settled();
    expect(confirmationsTo(smtp, address)).toHaveLength(1);
    expect(alertMails(address)).toEqual([]);
  });

  it('is confirmed by the page’s POST only: a GET of the link confirms nothing; then alerts and tests arrive', async () => {
    const a = await testAccount(t, 'consent-confirm@example.com');
    const address = 'confirm@example.com';
    const alert = await emailAlert(a.headers, 'B0CONSENT2', address);
    const path = linkIn(await confirmationMail(smtp, address), 'confirm');

    const shown = await t.http.get(path);
    expect(shown.status).toBe(200);
    expect(shown.headers['content-type']).toMatch(/^text\/html/);
    expect(shown.headers['content-security-policy']).toBe(
      "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(shown.headers['cache-control']).toBe('no-store');
    expect(shown.text).toContain('<form method="post">');
    expect(shown.text).toContain(address);
    expect(shown.text).not.toMatch(/<script|style=/);
    // A scanner fetching the link twice changes nothing.
    await t.http.get(path);
    expect(await statusOf(a.headers, alert.id)).toBe('pending');

    const confirmed = await t.http.post(path).type('form').send({});
    expect(confirmed.status).toBe(200);
    expect(confirmed.text).toContain('Confirmed');
    expect(await statusOf(a.headers, alert.id)).toBe('confirmed');
    // Confirming twice is confirming.
    expect((await t.http.post(path)).status).toBe(200);

    expect((await deliverChange(a.headers, alert.id, 'B0CONSENT2')).status).toBe('delivered');
    const tested = await t.http.post(`/api/alerts/${alert.id}/test`).set(a.headers);
    expect(tested.status).toBe(200);
    expect(tested.body.data.ok).toBe(true);
    const mails = alertMails(address);
    expect(mails).toHaveLength(2);
    for (const m of mails) {
      expect(unsubscribeHeaderPath(m)).toMatch(/^\/email\/unsubscribe\//);
      expect(m.headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');
      expect(m.text).toContain(`${APP_URL}/email/unsubscribe/`);
    }
  });

  it('of an alert made before confirmations gets its confirmation at its first delivery, and not the alert', async () => {
    const a = await testAccount(t, 'consent-legacy@example.com');
    const address = 'legacy@example.com';
    const alert = await emailAlert(a.headers, 'B0CONSENT3', address);
    await confirmationMail(smtp, address);
    await emailAddressModel(t.ctx.mongo).deleteMany({ user_id: a.id });
    const rec = await deliverChange(a.headers, alert.id, 'B0CONSENT3');
    expect(rec.last_error).toMatch(/awaiting its owner's confirmation/);
    await confirmationMail(smtp, address, 2);
    expect(alertMails(address)).toEqual([]);
  });
});

describe('one-click unsubscribe', () => {
  it('stops alerts and tests; a re-post asks again, and only a link sent after it confirms', async () => {
    const a = await testAccount(t, 'consent-unsub@example.com');
    const address = 'unsub@example.com';
    const alert = await emailAlert(a.headers, 'B0CONSENT4', address);
    const first = await confirmationMail(smtp, address);
    await confirmAddress(t, smtp, address);
    expect((await deliverChange(a.headers, alert.id, 'B0CONSENT4')).status).toBe('delivered');
    const [mail] = alertMails(address);

    // The page shows a button and changes nothing.
    const path = unsubscribeHeaderPath(mail!);
    const shown = await t.http.get(path);
    expect(shown.status).toBe(200);
    expect(shown.text).toContain('<input type="hidden" name="List-Unsubscribe" value="One-Click">');
    expect(await statusOf(a.headers, alert.id)).toBe('confirmed');

    // RFC 8058: the mailbox provider's POST, form-encoded, with no credentials.
    const res = await t.http.post(path).type('form').send('List-Unsubscribe=One-Click');
    expect(res.status).toBe(200);
    expect(res.text).toContain('Unsubscribed');
    expect(await statusOf(a.headers, alert.id)).toBe('unsubscribed');

    const rec = await deliverChange(a.headers, alert.id, 'B0CONSENT4');
    expect(rec).toMatchObject({ status: 'failed', attempts: 0 });
    expect(rec.last_error).toMatch(/^not sent: the address's owner unsubscribed it/);
    const tested = await t.http.post(`/api/alerts/${alert.id}/test`).set(a.headers);
    expect(tested.status).toBe(409);
    expect(alertMails(address)).toHaveLength(1);

    // The confirmation link sent before the unsubscribe cannot undo it.
    const stale = await t.http.post(linkIn(first, 'confirm'));
    expect(stale.status).toBe(410);
    expect(await statusOf(a.headers, alert.id)).toBe('unsubscribed');

    // A day later the account posts the alert again: a new link, and the owner's click resubscribes.
    await emailAddressModel(t.ctx.mongo).updateOne(
      { user_id: a.id, address },
      { $set: { confirmation_sent_at: new Date(Date.now() - 25 * 3_600_000) } },
    );
    expect((await emailAlert(a.headers, 'B0CONSENT4', address)).email_status).toBe('unsubscribed');
    const fresh = await confirmationMail(smtp, address, 2);
    expect((await t.http.post(linkIn(fresh, 'confirm'))).status).toBe(200);
    expect(await statusOf(a.headers, alert.id)).toBe('confirmed');
  });
});

describe('a permanent refusal', () => {
  it('is not retried, and EMAIL_BOUNCE_LIMIT of them in a row make the address bounced', async () => {
    const a = await testAccount(t, 'consent-bounce@example.com');
    const address = 'bounce@example.com';
    const alert = await emailAlert(a.headers, 'B0CONSENT5', address);
    await confirmAddress(t, smtp, address);

    smtp.refuse(550);
    const rec = await deliverChange(a.headers, alert.id, 'B0CONSENT5');
    expect(rec).toMatchObject({ status: 'failed', attempts: 1, response_code: 550 });
    expect(rec.last_error).toMatch(/550 .*; a permanent refusal: not retried$/);
    expect(await settledJob(rec.id)).toMatchObject({ state: 'failed', attemptsMade: 1 });
    expect(alertMails(address)).toHaveLength(1);

    // Refusals in a row: an accepted mail between them starts the count again.
    expect((await deliverChange(a.headers, alert.id, 'B0CONSENT5')).status).toBe('delivered');
    smtp.refuse(550, 550);
    await deliverChange(a.headers, alert.id, 'B0CONSENT5');
    expect(await statusOf(a.headers, alert.id)).toBe('confirmed');
    const second = await deliverChange(a.headers, alert.id, 'B0CONSENT5');
    expect(second.last_error).not.toMatch(/bounced/);
    smtp.refuse(550);
    const third = await deliverChange(a.headers, alert.id, 'B0CONSENT5');
    expect(third.last_error).toMatch(/the address is now bounced \(EMAIL_BOUNCE_LIMIT\)/);
    expect(await statusOf(a.headers, alert.id)).toBe('bounced');

    const after = await deliverChange(a.headers, alert.id, 'B0CONSENT5');
    expect(after).toMatchObject({ status: 'failed', attempts: 0 });
    expect(after.last_error).toMatch(/^not sent: the address's mail server refused mail permanently/);
    expect(alertMails(address)).toHaveLength(5);
  });
});

describe('a link that is not valid', () => {
  it('answers a 4xx page and changes nothing: tampered, of another purpose, expired, or naming no address', async () => {
    const a = await testAccount(t, 'consent-links@example.com');
    const address = 'links@example.com';
    const alert = await emailAlert(a.headers, 'B0CONSENT6', address);
    const mail = await confirmationMail(smtp, address);
    const path = linkIn(mail, 'confirm');
    const token = path.split('/').pop()!;
    const record = await emailAddressModel(t.ctx.mongo).findOne({ user_id: a.id, address }).lean();
    const key = parseAppKey(TEST_APP_KEY)!;
    const now = Date.now();

    const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    const cases: [string, string, number, RegExp][] = [
      ['tampered', `/email/confirm/${flipped}`, 400, /not valid/],
      [
        'another record',
        `/email/confirm/${token.replace(record!._id.toHexString(), new Types.ObjectId().toHexString())}`,
        400,
        /not valid/,
      ],
      ['garbage', '/email/confirm/%3Cscript%3E', 400, /not valid/],
      ['a confirm link used to unsubscribe', `/email/unsubscribe/${token}`, 400, /not valid/],
      [
        'expired',
        `/email/confirm/${signLink(key, { purpose: 'confirm', recordId: record!._id.toHexString(), issuedAt: now - 8 * 86_400_000, expiresAt: now - 86_400_000 })}`,
        410,
        /expired/,
      ],
      [
        'no such address',
        `/email/confirm/${signLink(key, { purpose: 'confirm', recordId: new Types.ObjectId().toHexString(), issuedAt: now, expiresAt: now + 60_000 })}`,
        404,
        /no longer known/,
      ],
    ];
    for (const [what, url, status, message] of cases) {
      for (const method of ['get', 'post'] as const) {
        const res = await t.http[method](url).type('form').send({});
        expect(res.status, `${what} ${method}`).toBe(status);
        expect(res.headers['content-type'], what).toMatch(/^text\/html/);
        expect(res.text, what).toMatch(message);
        expect(res.text, what).not.toContain('<script');
      }
    }
    expect(await statusOf(a.headers, alert.id)).toBe('pending');

    // Any other text where the token goes: a 4xx page, never a 5xx, and nothing changes.
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ minLength: 1, maxLength: 300 }), fc.constantFrom(token.slice(0, -1), `${token}.x`, token.replace(/^c/, 'u'))),
        fc.constantFrom('confirm', 'unsubscribe'),
        fc.constantFrom('get', 'post') as fc.Arbitrary<'get' | 'post'>,
        async (text, purpose, method) => {
          const res = await t.http[method](`/email/${purpose}/${encodeURIComponent(text)}`)
            .type('form')
            .send('List-Unsubscribe=One-Click');
          expect(res.status, text).toBeGreaterThanOrEqual(400);
          expect(res.status, text).toBeLessThan(500);
        },
      ),
      { numRuns: 150 },
    );
    expect(await statusOf(a.headers, alert.id)).toBe('pending');
  });
});

describe('the daily caps', () => {
  it('hold under 200 concurrent tests: the address’s cap, then the account’s; a capped delivery is not sent', async () => {
    const capped = await createTestContext({
      COUNTRIES: 'JP',
      SMTP_URL: `smtp://${SMTP_USER}:${SMTP_PASSWORD}@127.0.0.1:${smtp.port}`,
      SMTP_FROM: 'alerts@shelfwatch.test',
      RATE_LIMIT_API: '0',
      APP_URL,
      EMAIL_MAX_PER_ACCOUNT_PER_DAY: '60',
      // The test button's own limits off: this is about the e-mail caps.
      ALERT_TESTS_PER_HOUR: '0',
      ALERT_TESTS_PER_DAY: '0',
      ALERT_TESTS_IN_FLIGHT: '1000',
      EMAIL_MAX_PER_ADDRESS_PER_DAY: '50',
    });
    const capWorker = await startTestDeliveryWorker(capped, 'email-caps');
    try {
      const a = await testAccount(capped, 'consent-caps@example.com');
      const post = async (asin: string, email: string) =>
        (await capped.http.post('/api/alerts').set(a.headers).send({ asin, country: 'JP', kind: 'any_change', channel: 'email', email }))
          .body.data as { id: string };
      const one = await post('B0CONSENT7', 'cap-one@example.com');
      await confirmAddress(capped, smtp, 'cap-one@example.com');

      const answers = await Promise.all(Array.from({ length: 200 }, () => capped.http.post(`/api/alerts/${one.id}/test`).set(a.headers)));
      const ok = answers.filter((r) => r.status === 200);
      const refused = answers.filter((r) => r.status === 429);
      // The confirmation mail counts too: 1 + 49 = the address's 50.
      expect(ok).toHaveLength(49);
      expect(refused).toHaveLength(151);
      expect(refused[0]!.body.message).toMatch(/EMAIL_MAX_PER_ADDRESS_PER_DAY/);
      expect(Number(refused[0]!.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(refused[0]!.headers['retry-after'])).toBeLessThanOrEqual(86_400);
      expect(alertMails('cap-one@example.com')).toHaveLength(49);

      const rec = await (async () => {
        await capped.ctx.deliveries.enqueueFor([changeOf('B0CONSENT7', { rank: 1 }, { rank: 2 })]);
        return until('the capped delivery ended', async () => {
          const [d] = await deliveriesOf(capped, a.headers, one.id);
          return d && d.status !== 'pending' ? d : undefined;
        });
      })();
      expect(rec).toMatchObject({ status: 'failed', attempts: 0 });
      expect(rec.last_error).toMatch(/^not sent: the daily cap of 50 e-mails .*EMAIL_MAX_PER_ADDRESS_PER_DAY/);

      // The account has 60: 50 spent, a second address's confirmation 1, so 9 tests go.
      const two = await post('B0CONSENT8', 'cap-two@example.com');
      await confirmAddress(capped, smtp, 'cap-two@example.com');
      const more = await Promise.all(Array.from({ length: 20 }, () => capped.http.post(`/api/alerts/${two.id}/test`).set(a.headers)));
      expect(more.filter((r) => r.status === 200)).toHaveLength(9);
      const over = more.filter((r) => r.status === 429);
      expect(over).toHaveLength(11);
      expect(over[0]!.body.message).toMatch(/EMAIL_MAX_PER_ACCOUNT_PER_DAY/);
      expect(alertMails('cap-two@example.com')).toHaveLength(9);
    } finally {
      await capWorker.stop();
      await capped.close();
    }
  });
});
