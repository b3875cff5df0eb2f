import { expect } from 'vitest';
import type { TestContext } from './context.js';
import type { ReceivedMail, SmtpReceiver } from './smtp-receiver.js';
import { until } from './until.js';

/**
 * The double opt-in from the recipient's side: the confirmation mail an address got, the links
 * mails carry, and confirming as the address's owner would (the page's POST).
 */

export const CONFIRM_SUBJECT = 'Confirm that you want shelfwatch alerts at this address';

/** The path (under APP_URL) of a mail's confirm or unsubscribe link, from its plain text. */
export function linkIn(mail: ReceivedMail, purpose: 'confirm' | 'unsubscribe'): string {
  const url = new RegExp(`https?://[^\\s/]+(/email/${purpose}/[A-Za-z0-9._-]+)`).exec(mail.text)?.[1];
  expect(url, `a ${purpose} link in ${mail.text}`).toBeDefined();
  return url!;
}

/** The path of the List-Unsubscribe header's URL. */
export function unsubscribeHeaderPath(mail: ReceivedMail): string {
  const header = mail.headers['list-unsubscribe'];
  expect(header).toMatch(/^<https?:\/\/[^>]+>$/);
  return new URL(header!.slice(1, -1)).pathname;
}

/** The confirmation mails `address` got so far. */
export function confirmationsTo(smtp: SmtpReceiver, address: string): ReceivedMail[] {
  return smtp.received.filter((m) => m.to.includes(address) && m.headers.subject === CONFIRM_SUBJECT);
}

/** Waits for the `n`th confirmation mail to `address`. */
export function confirmationMail(smtp: SmtpReceiver, address: string, n = 1): Promise<ReceivedMail> {
  return until(`confirmation mail ${n} to ${address}`, async () => confirmationsTo(smtp, address)[n - 1]);
}

/** Confirms `address` as its owner would: the confirmation mail's link, its page's button (a POST). */
export async function confirmAddress(t: TestContext, smtp: SmtpReceiver, address: string): Promise<void> {
  const path = linkIn(await confirmationMail(smtp, address), 'confirm');
  const res = await t.http.post(path).type('form').send({});
  expect(res.status, res.text).toBe(200);
  expect(res.text).toContain('Confirmed');
}
