import { EventEmitter, once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One message as the server read it, accepted or refused, with its MIME parts decoded. */
export interface ReceivedMail {
  readonly from: string | null;
  readonly to: string[];
  /** The login the client gave (null when it gave none). */
  readonly user: string | null;
  readonly headers: Record<string, string>;
  /** The decoded text/plain and text/html parts. */
  readonly text: string;
  readonly html: string;
  /** The reply code it got: 250 accepted, else the scripted refusal. */
  readonly code: number;
}

/** RFC 2047 encoded words (`=?UTF-8?Q?…?=`, `=?UTF-8?B?…?=`), as nodemailer writes non-ASCII headers. */
function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_all, _charset: string, enc: string, text: string) =>
      enc.toUpperCase() === 'B' ? Buffer.from(text, 'base64').toString('utf8') : qp(text.replace(/_/g, ' ')),
    );
}

/** Quoted-printable to UTF-8 text. */
function qp(text: string): string {
  const bytes = text.replace(/=\r?\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_all, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

function parseHeaders(block: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = decodeWords(line.slice(colon + 1).trim());
  }
  return headers;
}

/** The text parts of a MIME entity, by content type. */
function parts(raw: string, into: Record<string, string> = {}): Record<string, string> {
  const split = raw.search(/\r?\n\r?\n/);
  const headers = parseHeaders(raw.slice(0, split));
  const body = raw.slice(split).replace(/^\r?\n\r?\n/, '');
  const type = headers['content-type'] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    for (const part of body.split(`--${boundary}`).slice(1)) {
      if (part.startsWith('--')) break;
      parts(part.replace(/^\r?\n/, ''), into);
    }
    return into;
  }
  const encoding = (headers['content-transfer-encoding'] ?? '7bit').toLowerCase();
  const text = encoding === 'base64' ? Buffer.from(body, 'base64').toString('utf8') : encoding === 'quoted-printable' ? qp(body) : body;
  into[type.split(';')[0]!.trim().toLowerCase()] = text;
  return into;
}

/**
 * A real SMTP server on loopback (the `smtp-server` package), without TLS, that takes one login and
 * records every message; `refuse` scripts the reply codes of the next messages (then it accepts).
 */
export class SmtpReceiver {
  readonly received: ReceivedMail[] = [];
  /** Every login a client tried, accepted or not (the user name): a client that refused plain text tries none. */
  readonly logins: string[] = [];
  readonly #events = new EventEmitter();
  readonly #refusals: number[] = [];
  #server: SMTPServer | undefined;
  port = 0;

  constructor(
    readonly user: string,
    readonly password: string,
  ) {}

  async start(): Promise<this> {
    this.#server = new SMTPServer({
      secure: false,
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      logger: false,
      onAuth: (auth, _session, callback) => {
        this.logins.push(auth.username ?? '');
        if (auth.username === this.user && auth.password === this.password) return callback(null, { user: auth.username });
        return callback(new Error('Invalid username or password'));
      },
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('latin1');
          const split = raw.search(/\r?\n\r?\n/);
          const decoded = parts(Buffer.from(raw, 'latin1').toString('utf8'));
          const code = this.#refusals.shift() ?? 250;
          const mail: ReceivedMail = {
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
            to: session.envelope.rcptTo.map((r) => r.address),
            user: typeof session.user === 'string' ? session.user : null,
            headers: parseHeaders(raw.slice(0, split)),
            text: decoded['text/plain'] ?? '',
            html: decoded['text/html'] ?? '',
            code,
          };
          this.received.push(mail);
          this.#events.emit('mail', mail);
          if (code === 250) return callback(null, 'Message queued');
          return callback(Object.assign(new Error('Mailbox busy, try again later'), { responseCode: code }));
        });
      },
    });
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server.server, 'listening');
    this.port = (this.#server.server.address() as AddressInfo).port;
    return this;
  }

  /** The reply codes of the next messages, in order (4xx, 5xx); after them it accepts. */
  refuse(...codes: number[]): void {
    this.#refusals.push(...codes);
  }

  /** Resolves once `count` messages to `to` have arrived; rejects after `timeoutMs`. */
  waitFor(to: string, count: number, timeoutMs = 20_000): Promise<ReceivedMail[]> {
    const mine = () => this.received.filter((m) => m.to.includes(to));
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        if (mine().length < count) return false;
        clearTimeout(timer);
        this.#events.off('mail', check);
        resolve(mine());
        return true;
      };
      const timer = setTimeout(() => {
        this.#events.off('mail', check);
        reject(new Error(`${to}: ${mine().length} of ${count} messages within ${timeoutMs} ms`));
      }, timeoutMs);
      if (!check()) this.#events.on('mail', check);
    });
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => (this.#server ? this.#server.close(() => r()) : r()));
  }
}
