import { Router, type Response } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject, ZodOpenApiResponseObject, ZodOpenApiResponsesObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import { html } from '../../../alerts/deliveries/channels/email.js';
import { LINK_PATHS } from '../../../alerts/endpoints/email-links.js';
import type { LinkResult } from '../../../alerts/endpoints/email-addresses.js';
import { errors } from '../openapi/responses.js';
import { errorBodySchema } from '../error-body.js';

/**
 * The pages of the links e-mails carry (src/alerts/endpoints/email-links.ts), public and without a token of
 * the API: whoever holds the link is the address's owner. A GET only shows a page whose button
 * POSTs (a plain form: no script needed, and mail scanners that fetch links change nothing); the
 * POST confirms or unsubscribes. Mailbox providers POST the unsubscribe URL themselves
 * (RFC 8058, `List-Unsubscribe=One-Click`). The token is checked (HMAC) before any database read.
 */

// Nothing to load: no script, no style, no image; the form posts only to this server.
export const EMAIL_PAGE_POLICY = "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const tokenParam = z.object({ token: z.string().meta({ description: 'The signed token the mail’s link carries.' }) });

const page = (description: string): ZodOpenApiResponseObject => ({ description, content: { 'text/html': { schema: z.string() } } });

/** 400 is also the body parser's JSON answer, like every route's. */
const badLink: ZodOpenApiResponseObject = {
  description: 'The link is not valid (cut short, changed, or of another purpose): a page saying so; nothing changed.',
  content: { 'text/html': { schema: z.string() }, 'application/json': { schema: errorBodySchema } },
};

/** Besides the pages: the body parser's 413 and 415, and 503 while MongoDB is away, in the error handler's JSON. */
function linkErrors(): ZodOpenApiResponsesObject {
  return {
    ...errors(),
    400: badLink,
    404: page('The address the link names is no longer known: a page saying so; nothing changed.'),
    410: page(
      'The link has expired, or (confirm) was sent before the address was last unsubscribed or bounced: a page saying so; nothing changed.',
    ),
  };
}

const unsubscribeBody = z.object({
  'List-Unsubscribe': z
    .string()
    .optional()
    .meta({ description: 'One-Click, as RFC 8058 has mailbox providers send it; the page’s button sends it too. Not required.' }),
});

export const emailLinkPaths: ZodOpenApiPathsObject = {
  [`${LINK_PATHS.confirm}/{token}`]: {
    get: {
      tags: ['E-mail links'],
      operationId: 'showEmailConfirmation',
      summary: 'The page of a confirmation link: a button that confirms (this GET confirms nothing)',
      requestParams: { path: tokenParam },
      responses: { 200: page('A page naming the address, with a Confirm button (a form that POSTs here).'), ...linkErrors() },
    },
    post: {
      tags: ['E-mail links'],
      operationId: 'confirmEmail',
      summary: "Confirm the address: the account's alert and test mails go to it from now on",
      requestParams: { path: tokenParam },
      responses: { 200: page('Confirmed (or already confirmed): a page saying so.'), ...linkErrors() },
    },
  },
  [`${LINK_PATHS.unsubscribe}/{token}`]: {
    get: {
      tags: ['E-mail links'],
      operationId: 'showEmailUnsubscribe',
      summary: 'The page of an unsubscribe link: a button that unsubscribes (this GET changes nothing)',
      requestParams: { path: tokenParam },
      responses: { 200: page('A page naming the address, with an Unsubscribe button (a form that POSTs here).'), ...linkErrors() },
    },
    post: {
      tags: ['E-mail links'],
      operationId: 'unsubscribeEmail',
      summary: 'One-click unsubscribe (RFC 8058): the account mails the address nothing more',
      description:
        'The URL of every mail’s `List-Unsubscribe` header, which carries `List-Unsubscribe-Post: List-Unsubscribe=One-Click`. No API token: the signed token in the path is the authority. Posting the alert again mails the address a new confirmation link; only its owner confirming it resubscribes it.',
      requestParams: { path: tokenParam },
      requestBody: { required: false, content: { 'application/x-www-form-urlencoded': { schema: unsubscribeBody } } },
      responses: { 200: page('Unsubscribed (or already): a page saying so.'), ...linkErrors() },
    },
  },
};

interface PageContent {
  readonly title: string;
  readonly paragraphs: readonly string[];
  /** A form that POSTs to this page's own URL, with this button. */
  readonly button?: { readonly label: string; readonly fields?: Readonly<Record<string, string>> };
}

/** A page with nothing but text and at most one form; every text is escaped. */
function render(res: Response, status: number, p: PageContent): void {
  const form = p.button
    ? [
        '<form method="post">',
        ...Object.entries(p.button.fields ?? {}).map(([k, v]) => `<input type="hidden" name="${html(k)}" value="${html(v)}">`),
        `<button type="submit">${html(p.button.label)}</button>`,
        '</form>',
      ]
    : [];
  const body = [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="robots" content="noindex">',
    `<title>${html(p.title)}</title></head>`,
    `<body><h1>${html(p.title)}</h1>`,
    ...p.paragraphs.map((t) => `<p>${html(t)}</p>`),
    ...form,
    '</body></html>',
    '',
  ].join('\n');
  res
    .status(status)
    .set({ 'Content-Security-Policy': EMAIL_PAGE_POLICY, 'Cache-Control': 'no-store', 'X-Robots-Tag': 'noindex' })
    .type('html')
    .send(body);
}

function refused(res: Response, result: Extract<LinkResult, { ok: false }>): void {
  render(res, result.status, { title: 'This link does not work', paragraphs: [result.message] });
}

/** The confirmation and unsubscribe pages. */
export function emailLinkRoutes(ctx: AppContext): Router {
  const router = Router();
  const addresses = ctx.emailAddresses;

  router.get(`${LINK_PATHS.confirm}/:token`, async (req, res) => {
    const token = String(req.params.token);
    const found = await addresses.inspect(token, 'confirm');
    if (!found.ok) return refused(res, found);
    if (found.state === 'confirmed') {
      return render(res, 200, { title: 'Already confirmed', paragraphs: [`Alerts are mailed to ${found.address}.`] });
    }
    render(res, 200, {
      title: 'Confirm e-mail alerts',
      paragraphs: [
        `An account on this shelfwatch server asked to send product alerts to ${found.address}.`,
        'Press Confirm to receive them. If you did not ask for them, close this page: nothing is sent unless you confirm.',
      ],
      button: { label: 'Confirm' },
    });
  });

  router.post(`${LINK_PATHS.confirm}/:token`, async (req, res) => {
    const token = String(req.params.token);
    const done = await addresses.confirm(token);
    if (!done.ok) return refused(res, done);
    render(res, 200, {
      title: 'Confirmed',
      paragraphs: [`Alerts are mailed to ${done.address} from now on. Every mail has a link to stop them.`],
    });
  });

  router.get(`${LINK_PATHS.unsubscribe}/:token`, async (req, res) => {
    const token = String(req.params.token);
    const found = await addresses.inspect(token, 'unsubscribe');
    if (!found.ok) return refused(res, found);
    if (found.state === 'unsubscribed') {
      return render(res, 200, { title: 'Already unsubscribed', paragraphs: [`Nothing more is mailed to ${found.address}.`] });
    }
    render(res, 200, {
      title: 'Unsubscribe',
      paragraphs: [`Press Unsubscribe, and this account's alerts are no longer mailed to ${found.address}.`],
      button: { label: 'Unsubscribe', fields: { 'List-Unsubscribe': 'One-Click' } },
    });
  });

  router.post(`${LINK_PATHS.unsubscribe}/:token`, async (req, res) => {
    const token = String(req.params.token);
    const done = await addresses.unsubscribe(token);
    if (!done.ok) return refused(res, done);
    render(res, 200, { title: 'Unsubscribed', paragraphs: [`This account's alerts are no longer mailed to ${done.address}.`] });
  });

  return router;
}
