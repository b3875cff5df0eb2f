/**
 * The mail that asks an address's owner whether they want an account's alerts. It names no
 * account (an account's name is its own text, and would let it write into a mail to a stranger),
 * only the server, and says what happens if they do nothing: nothing more is sent.
 */
import { html, type EmailContent } from './email.js';

export interface ConfirmationFacts {
  readonly address: string;
  /** APP_URL's host: whose server asks. */
  readonly server: string;
  readonly confirmUrl: string;
  readonly unsubscribeUrl: string;
  readonly validDays: number;
}

export function confirmationContent(f: ConfirmationFacts): EmailContent {
  const days = `${f.validDays} day${f.validDays === 1 ? '' : 's'}`;
  const lines = [
    `An account on the shelfwatch server at ${f.server} asked to send product alerts (price and stock changes) to ${f.address}.`,
    `To receive them, open this link and press Confirm (the link works for ${days}):`,
    f.confirmUrl,
    'If you did not ask for this, ignore this mail: nothing more is sent to you unless you confirm.',
    `To refuse every mail of this account: ${f.unsubscribeUrl}`,
  ];
  const text = [lines[0], '', lines[1], lines[2], '', lines[3], '', lines[4], ''].join('\n');
  const body = [
    '<!doctype html>',
    '<html><body style="font-family:sans-serif;line-height:1.4">',
    `<p>${html(lines[0]!)}</p>`,
    `<p>To receive them, <a href="${html(f.confirmUrl)}">open this link and press Confirm</a> (it works for ${html(days)}).</p>`,
    `<p>${html(lines[3]!)}</p>`,
    `<p style="color:#666;font-size:0.9em"><a href="${html(f.unsubscribeUrl)}">Refuse every mail of this account</a></p>`,
    '</body></html>',
    '',
  ].join('\n');
  return { subject: 'Confirm that you want shelfwatch alerts at this address', text, html: body };
}
