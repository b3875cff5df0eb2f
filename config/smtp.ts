/**
 * The SMTP server e-mail alerts go through: operator configuration, not the account's, so it is
 * trusted like MONGODB_URI (no address guard). Parsed by loadConfig (env.ts); unset, e-mail alerts
 * are refused at creation.
 */
import { z } from 'zod';
import { isLoopbackHost } from './parsers.js';

const URL_MESSAGE = 'must be an smtp:// or smtps:// URL such as smtps://user:password@mail.example.com:465';

export interface SmtpConfig {
  readonly host: string;
  readonly port: number;
  /** smtps: TLS from the first byte; smtp: STARTTLS whenever the server offers it. */
  readonly secure: boolean;
  /**
   * smtp: refuse to send (and to log in) unless the server upgrades with STARTTLS, so a stripped
   * STARTTLS cannot make the client send the password in clear. Off only as SMTP_ALLOW_PLAINTEXT says.
   */
  readonly requireTls: boolean;
  /** Both or neither: the server's login. */
  readonly auth: { readonly user: string; readonly pass: string } | undefined;
  readonly from: { readonly name: string | undefined; readonly address: string };
}

/**
 * `smtp(s)://[user:password@]host[:port]`, the user and password percent-encoded as in any URL.
 * The port defaults to 587 (submission) for smtp: and 465 for smtps:. A path or query would be
 * ignored by the mailer, so it is refused rather than silently dropped.
 */
const smtpUrl = z
  .string()
  .transform((v, ctx) => {
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
  })
  .meta({ type: 'smtp(s) URL' });

const MAILBOX_MESSAGE = 'must be an e-mail address, or a name and one in angle brackets: Shelfwatch <alerts@example.com>';

/** `alerts@example.com` or `Shelfwatch <alerts@example.com>`; no line breaks (they would start a header). */
const mailbox = z
  .string()
  .transform((v, ctx) => {
    const m = /^\s*(?:([^<>\r\n]*?)\s*<([^<>\s]+)>|([^<>\s]+))\s*$/.exec(v);
    const address = m?.[2] ?? m?.[3];
    if (!m || !address || !z.email().safeParse(address).success) {
      ctx.addIssue({ code: 'custom', message: MAILBOX_MESSAGE });
      return z.NEVER;
    }
    const name = m[1]?.replace(/^"(.*)"$/, '$1').trim();
    return { name: name || undefined, address };
  })
  .meta({ type: 'mailbox' });

/**
 * Where an smtp:// server may be spoken to in plain text (no STARTTLS): `loopback` (a relay on this
 * machine, where nothing crosses a network), `true` (any host: a relay on a private network the
 * operator trusts) or `false` (nowhere, loopback included).
 */
const allowPlaintext = z.enum(['false', 'loopback', 'true'], { error: 'must be false, loopback or true' });
export type PlaintextRule = z.infer<typeof allowPlaintext>;

export const smtpEnvSchema = z.object({
  SMTP_URL: smtpUrl.optional().meta({
    description:
      'The SMTP server of e-mail alerts, `smtp://user:password@host:port` (STARTTLS when offered; port 587) or `smtps://…` (TLS from the start; port 465), user and password percent-encoded.',
    unset: 'e-mail alerts off (refused with 422)',
  }),
  SMTP_FROM: mailbox.optional().meta({
    description:
      'The sender, `alerts@example.com` or `Shelfwatch <alerts@example.com>`; required with `SMTP_URL`, as is `APP_URL` (every mail carries links under it).',
    unset: 'e-mail alerts off',
  }),
  SMTP_ALLOW_PLAINTEXT: allowPlaintext.default('loopback').meta({
    description:
      'Where an `smtp://` server may be spoken to without STARTTLS: `loopback` (a relay on this machine), `true` (any host) or `false` (nowhere); elsewhere nothing is sent in clear.',
  }),
});

/** Whether an smtp:// connection to `host` must be upgraded with STARTTLS before anything is sent. */
export function requiresTls(host: string, rule: PlaintextRule): boolean {
  if (rule === 'true') return false;
  if (rule === 'false') return true;
  return !(isLoopbackHost(host) || host === '::1');
}

export function buildSmtpConfig(env: z.infer<typeof smtpEnvSchema> & { APP_URL?: string }): {
  config: SmtpConfig | null;
  problems: string[];
} {
  if ((env.SMTP_URL === undefined) !== (env.SMTP_FROM === undefined)) {
    return { config: null, problems: ['SMTP_URL and SMTP_FROM must be set together (or neither, to turn e-mail alerts off)'] };
  }
  if (!env.SMTP_URL || !env.SMTP_FROM) return { config: null, problems: [] };
  if (env.APP_URL === undefined) {
    // Every mail carries links (confirm, unsubscribe) that must reach this server from a mailbox.
    return { config: null, problems: ['APP_URL must be set with SMTP_URL: confirmation and unsubscribe links in e-mails start with it'] };
  }
  const requireTls = !env.SMTP_URL.secure && requiresTls(env.SMTP_URL.host, env.SMTP_ALLOW_PLAINTEXT);
  return { config: Object.freeze({ ...env.SMTP_URL, requireTls, from: Object.freeze(env.SMTP_FROM) }), problems: [] };
}
