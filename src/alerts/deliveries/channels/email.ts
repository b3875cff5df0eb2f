/**
 * E-mail alerts through the operator's SMTP server (nodemailer). The Message-ID is made from the
 * delivery's id, so every retry and replay of a delivery is the same message to mail clients and
 * to the receiving server's duplicate checks, as the webhook-id is to a webhook receiver.
 */
import type * as Nodemailer from 'nodemailer';
import type { SmtpConfig } from '../../../../config/smtp.js';
import { withTimeout } from '../../../db/mongo.js';
import { EmailDeliveryError } from '../../../core/errors.js';
import type { AlertMessage } from './message.js';
import type { ChannelAnswer } from './types.js';

export interface EmailContent {
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

export function html(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const FOOTER = 'Sent by shelfwatch for an alert of your account.';
const TEST_NOTE = "This is a test from the alert's Test button, not an observed change.";
const UNSUBSCRIBE_NOTE = 'Stop all mail of this account to this address:';

/** The alert's mail; `unsubscribeUrl` (the List-Unsubscribe link) also ends its footer, for readers whose client shows no button. */
export function emailContent(m: AlertMessage, unsubscribeUrl?: string): EmailContent {
  const facts: [string, string][] = [
    ['Change', m.change],
    ['ASIN', m.asin],
    ['Marketplace', m.country],
    ['Seen', m.at],
  ];
  const text = [
    `${m.test ? '[Test] ' : ''}${m.what}: ${m.product}`,
    '',
    ...facts.map(([k, v]) => `${`${k}:`.padEnd(13)}${v}`),
    '',
    m.link,
    '',
    '-- ',
    FOOTER,
    ...(m.test ? [TEST_NOTE] : []),
    ...(unsubscribeUrl ? [`${UNSUBSCRIBE_NOTE} ${unsubscribeUrl}`] : []),
    '',
  ].join('\n');
  const rows = facts.map(([k, v]) => `<tr><th align="left" style="padding-right:1em">${html(k)}</th><td>${html(v)}</td></tr>`);
  const body = [
    '<!doctype html>',
    '<html><body style="font-family:sans-serif;line-height:1.4">',
    `<p>${m.test ? '<strong>[Test]</strong> ' : ''}<strong>${html(m.what)}</strong>: <a href="${html(m.link)}">${html(m.product)}</a></p>`,
    `<table>${rows.join('')}</table>`,
    `<p><a href="${html(m.link)}">Open the product page</a></p>`,
    `<p style="color:#666;font-size:0.9em">${html(FOOTER)}${m.test ? ` ${html(TEST_NOTE)}` : ''}${
      unsubscribeUrl ? ` <a href="${html(unsubscribeUrl)}">${html(UNSUBSCRIBE_NOTE.replace(/:$/, ''))}</a>` : ''
    }</p>`,
    '</body></html>',
    '',
  ].join('\n');
  return { subject: m.summary, text, html: body };
}

/** `<delivery id@sender's domain>`: a delivery id is made of letters, digits and dots already. */
export function messageIdOf(deliveryId: string, from: SmtpConfig['from']): string {
  const domain = from.address.slice(from.address.lastIndexOf('@') + 1);
  return `<${deliveryId.replace(/[^A-Za-z0-9.-]/g, '-')}@${domain}>`;
}

/** nodemailer takes about 170 ms to import: loaded with the first e-mail, not by every process at start. */
let mailer: Promise<typeof Nodemailer> | undefined;
const loadMailer = () => (mailer ??= import('nodemailer'));

export interface EmailRequest {
  readonly to: string;
  readonly deliveryId: string;
  readonly content: EmailContent;
  readonly timeoutMs: number;
  /** Headers of the message besides ours (List-Unsubscribe and List-Unsubscribe-Post). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The commands whose 5xx reply refuses this recipient or message for good (not the login, not the connection). */
function refusedAt(command: unknown): 'RCPT TO' | 'DATA' | null {
  return command === 'RCPT TO' || command === 'DATA' ? command : null;
}

/**
 * Sends one message. Resolves when the server accepted it (its reply code as `status`); rejects
 * with EmailDeliveryError when it refused it, could not be reached or did not finish within
 * `timeoutMs`. One connection per message: deliveries are spread out, and a pooled connection held
 * open between them would be one more thing to drain at shutdown.
 */
export async function sendEmail(smtp: SmtpConfig | null, req: EmailRequest): Promise<ChannelAnswer> {
  if (!smtp) throw new EmailDeliveryError('e-mail alerts are off on this server: SMTP_URL and SMTP_FROM are not set', null);
  const nodemailer = await loadMailer();
  const started = performance.now();
  const transport = nodemailer.createTransport({
    host: smtp.host,
    port: smtp.port,
    secure: smtp.secure,
    requireTLS: smtp.requireTls,
    auth: smtp.auth ? { user: smtp.auth.user, pass: smtp.auth.pass } : undefined,
    connectionTimeout: req.timeoutMs,
    greetingTimeout: req.timeoutMs,
    socketTimeout: req.timeoutMs,
    // The content is ours, but nothing in a message should ever make the mailer read a file or a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  try {
    const info = (await withTimeout(
      transport.sendMail({
        from: smtp.from.name ? { name: smtp.from.name, address: smtp.from.address } : smtp.from.address,
        to: req.to,
        subject: req.content.subject,
        text: req.content.text,
        html: req.content.html,
        messageId: messageIdOf(req.deliveryId, smtp.from),
        // RFC 3834: an automatic message, so vacation responders do not answer it.
        headers: { ...req.headers, 'Auto-Submitted': 'auto-generated' },
      }),
      req.timeoutMs,
      'e-mail',
      () => new EmailDeliveryError(`the SMTP server gave no complete answer within ${req.timeoutMs} ms`, null),
    )) as { response?: unknown };
    const code = typeof info.response === 'string' ? /^(\d{3})/.exec(info.response)?.[1] : undefined;
    return { status: code ? Number(code) : 250, durationMs: Math.round(performance.now() - started), verdict: 'ok', reason: null };
  } catch (err) {
    if (err instanceof EmailDeliveryError) throw err;
    const e = err as Error & { responseCode?: unknown; response?: unknown; code?: unknown; command?: unknown };
    const detail = typeof e.response === 'string' ? e.response : e.message;
    const code = typeof e.code === 'string' && !detail.includes(e.code) ? ` (${e.code})` : '';
    throw new EmailDeliveryError(
      `the SMTP server did not take the e-mail: ${detail}${code}`,
      typeof e.responseCode === 'number' ? e.responseCode : null,
      { cause: err },
      refusedAt(e.command),
    );
  } finally {
    transport.close();
  }
}
