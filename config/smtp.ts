/**
 * The SMTP server e-mail alerts go through: operator configuration, not the account's, so it is
 * trusted like MONGODB_URI (no address guard). Parsed by loadConfig (env.ts); unset, e-mail alerts
 * are refused at creation.
 */
import { z } from 'zod';

const URL_MESSAGE = 'must be an smtp:// or smtps:// URL such as smtps://user:password@mail.example.com:465';

export interface SmtpConfig {
  readonly host: string;
  readonly port: number;
  /** smtps: TLS from the first byte; smtp: STARTTLS whenever the server offers it. */
  readonly secure: boolean;
  /** Both or neither: the server's login. */
  readonly auth: { readonly user: string; readonly pass: string } | undefined;
  readonly from: { readonly name: string | undefined; readonly address: string };
}

/**
 * `smtp(s)://[user:password@]host[:port]`, the user and password percent-encoded as in any URL.
 * The port defaults to 587 (submission) for smtp: and 465 for smtps:. A path or query would be
 * ignored by the mailer, so it is refused rather than silently dropped.
 */
const smtpUrl = z.string().transform((v, ctx) => {
  const refuse = (message = URL_MESSAGE) => {
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  };
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return refuse();
  }
  if ((u.protocol !== 'smtp:' && u.protocol !== 'smtps:') || u.hostname === '') return refuse();
  if ((u.pathname !== '' && u.pathname !== '/') || u.search !== '' || u.hash !== '') {
    return refuse('must not have a path, query or fragment (smtp(s)://user:password@host:port)');
  }
  let user: string;
  let pass: string;
  try {
    user = decodeURIComponent(u.username);
    pass = decodeURIComponent(u.password);
  } catch {
    return refuse('must percent-encode its user name and password');
  }
  if ((user === '') !== (pass === '')) return refuse('must give both a user name and a password, or neither');
  const secure = u.protocol === 'smtps:';
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: u.port === '' ? (secure ? 465 : 587) : Number(u.port),
    secure,
    auth: user === '' ? undefined : { user, pass },
  };
});

const MAILBOX_MESSAGE = 'must be an e-mail address, or a name and one in angle brackets: Shelfwatch <alerts@example.com>';

/** `alerts@example.com` or `Shelfwatch <alerts@example.com>`; no line breaks (they would start a header). */
const mailbox = z.string().transform((v, ctx) => {
  const m = /^\s*(?:([^<>\r\n]*?)\s*<([^<>\s]+)>|([^<>\s]+))\s*$/.exec(v);
  const address = m?.[2] ?? m?.[3];
  if (!m || !address || !z.email().safeParse(address).success) {
    ctx.addIssue({ code: 'custom', message: MAILBOX_MESSAGE });
    return z.NEVER;
  }
  const name = m[1]?.replace(/^"(.*)"$/, '$1').trim();
  return { name: name || undefined, address };
});

export const smtpEnvSchema = z.object({
  SMTP_URL: smtpUrl.optional(),
  SMTP_FROM: mailbox.optional(),
});

export function buildSmtpConfig(env: z.infer<typeof smtpEnvSchema>): { config: SmtpConfig | null; problems: string[] } {
  if ((env.SMTP_URL === undefined) !== (env.SMTP_FROM === undefined)) {
    return { config: null, problems: ['SMTP_URL and SMTP_FROM must be set together (or neither, to turn e-mail alerts off)'] };
  }
  if (!env.SMTP_URL || !env.SMTP_FROM) return { config: null, problems: [] };
  return { config: Object.freeze({ ...env.SMTP_URL, from: Object.freeze(env.SMTP_FROM) }), problems: [] };
}
