/**
 * E-mail only to people who said yes. Each (account, address) an e-mail alert names has a record
 * (src/models/email-address.ts): `pending` until the address's owner confirms through the link
 * mailed to it, then `confirmed`; `unsubscribed` by the List-Unsubscribe link of any mail;
 * `bounced` after EMAIL_BOUNCE_LIMIT permanent refusals in a row. Every mail the service sends to
 * an address goes through `admit` first (real deliveries and the test button alike, in
 * channels/dispatch.ts): only a confirmed address within the daily caps (email-caps.ts) gets one,
 * and with the headers of RFC 8058's one-click unsubscribe.
 *
 * Posting an alert on an address again asks again: a confirmation mail goes to any address not
 * confirmed (at most one a day per account and address), and only its owner's click confirms it.
 * So an account cannot undo its recipient's unsubscribe, and an old confirmation link cannot
 * either: a link issued before the last unsubscribe or bounce confirms nothing.
 */
import mongoose, { Types, type Connection } from 'mongoose';
import type { Config } from '../../../config/env.js';
import { DELIVERY_DB_TIMEOUT_MS } from '../../../config/alerts.js';
import { emailAddressModel, type EmailAddressFields, type EmailState } from '../../models/email-address.js';
import { ConflictError, EmailNotSentError, TooManyRequestsError, type HttpError } from '../../core/errors.js';
import { isDuplicateKey, withTimeout } from '../../db/mongo.js';
import type { Redis } from '../../db/redis.js';
import type { Logger } from '../../logger.js';
import { EmailCaps } from './email-caps.js';
import { linkUrl, signLink, verifyLink, UNSUBSCRIBE_TTL_MS, type LinkPurpose } from './email-links.js';
import { sendEmail } from '../deliveries/channels/email.js';
import { confirmationContent } from '../deliveries/channels/confirmation-mail.js';

/** At most one confirmation mail per account and address within this long. */
export const CONFIRMATION_INTERVAL_MS = 86_400_000;

/** What a mail the gate admitted carries: RFC 8058's headers, and the link for its footer. */
export interface MailPass {
  readonly headers: Readonly<Record<string, string>>;
  readonly unsubscribeUrl: string;
}

/** The gate every mail to an address passes (channels/dispatch.ts); throws EmailNotSentError when it may not go. */
export interface EmailGate {
  admit(userId: string, address: string): Promise<MailPass>;
}

/** What a link's page shows: the record it names, or why it names none. */
export type LinkResult =
  | { readonly ok: true; readonly address: string; readonly state: EmailState }
  | { readonly ok: false; readonly status: 400 | 404 | 410; readonly message: string };

export interface EmailAddressesDeps {
  readonly conn: Connection;
  readonly redis: Redis;
  readonly redisPrefix: string;
  readonly config: Pick<Config, 'alerts' | 'http'>;
  readonly appKey: Buffer;
  readonly logger: Logger;
  /** Tests: the clock of links, caps and the confirmation interval. */
  readonly now?: () => number;
}

type Record_ = EmailAddressFields;

const INVALID: LinkResult = { ok: false, status: 400, message: 'This link is not valid: it may have been cut short or changed.' };
const EXPIRED: LinkResult = {
  ok: false,
  status: 410,
  message: 'This link has expired. A new confirmation mail is sent when the alert is posted again.',
};
const UNKNOWN: LinkResult = { ok: false, status: 404, message: 'This address is no longer known to this server.' };
const STALE: LinkResult = {
  ok: false,
  status: 410,
  message:
    'This link was sent before the address was unsubscribed or refused mail; it confirms nothing. A new one is sent when the alert is posted again.',
};

export class EmailAddresses implements EmailGate {
  private readonly caps: EmailCaps;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly now: () => number;

  constructor(private readonly deps: EmailAddressesDeps) {
    this.caps = new EmailCaps(deps.redis, deps.redisPrefix, deps.config.alerts.email);
    this.now = deps.now ?? Date.now;
  }

  private get records() {
    return emailAddressModel(this.deps.conn);
  }

  /**
   * An alert was posted naming `address` (a creation, or a re-post): the record is made `pending`
   * if the account has none, and an address not confirmed gets a confirmation mail (in the
   * background, so the request does not wait on SMTP), unless one went within the last day.
   * Answers the address's state.
   */
  async named(userId: Types.ObjectId, address: string): Promise<EmailState> {
    const record = await this.ensure(userId, address);
    if (record.state !== 'confirmed') await this.requestConfirmation(record);
    return record.state;
  }

  /**
   * Lets a mail to `address` go (answering the headers it carries) when the account's address is
   * confirmed and both daily caps have room; throws EmailNotSentError otherwise. An address with
   * no record (an alert of before confirmations) gets one, pending, and its confirmation mail.
   */
  async admit(userId: string, address: string): Promise<MailPass> {
    const user = new Types.ObjectId(userId);
    let record: Record_ | null = await this.records.findOne({ user_id: user, address }).maxTimeMS(DELIVERY_DB_TIMEOUT_MS).lean();
    if (!record) {
      record = await this.ensure(user, address);
      if (record.state === 'pending') await this.requestConfirmation(record);
    }
    if (record.state !== 'confirmed') throw refusal(record.state);
    const cap = await this.caps.take(userId, address, this.now());
    if (!cap.ok) {
      const variable = cap.cap === 'account' ? 'EMAIL_MAX_PER_ACCOUNT_PER_DAY' : 'EMAIL_MAX_PER_ADDRESS_PER_DAY';
      const what = cap.cap === 'account' ? 'this account' : 'this account to this address';
      throw new EmailNotSentError(
        `the daily cap of ${cap.limit} e-mails from ${what} is reached (${variable}); it starts again at midnight UTC`,
        cap.cap === 'account' ? 'account_cap' : 'address_cap',
        cap.retryAfterSeconds,
      );
    }
    return this.pass(record);
  }

  /** A permanent refusal of a delivery to the address; answers true when it made the address `bounced`. */
  async recordBounce(userId: string, address: string): Promise<boolean> {
    const filter = { user_id: new Types.ObjectId(userId), address, $or: [{ state: 'pending' as const }, { state: 'confirmed' as const }] };
    const after: Record_ | null = await this.write(
      this.records
        .findOneAndUpdate(filter, { $inc: { bounces: 1 } }, { returnDocument: 'after' })
        .lean()
        .exec(),
    );
    if (!after || after.bounces < this.deps.config.alerts.email.bounceLimit) return false;
    const res = await this.write(
      this.records
        .updateOne({ _id: after._id, state: after.state }, { $set: { state: 'bounced', closed_at: new Date(this.now()) } })
        .exec(),
    );
    return res.modifiedCount === 1;
  }

  /** An accepted mail: the refusals counted so far were not in a row. */
  async recordAccepted(userId: string, address: string): Promise<void> {
    await this.write(
      this.records
        .updateOne({ user_id: new Types.ObjectId(userId), address, bounces: mongoose.trusted({ $gt: 0 }) }, { $set: { bounces: 0 } })
        .exec(),
    );
  }

  /** The states of the account's addresses; an address with no record is pending (it gets one at its first mail). */
  async statesOf(userId: Types.ObjectId, addresses: readonly string[]): Promise<Map<string, EmailState>> {
    const unique = [...new Set(addresses)];
    const states = new Map<string, EmailState>(unique.map((a) => [a, 'pending']));
    if (unique.length === 0) return states;
    const found = await this.records
      .find({ user_id: userId, address: mongoose.trusted({ $in: unique }) })
      .select({ address: 1, state: 1 })
      .lean();
    for (const r of found) states.set(r.address, r.state);
    return states;
  }

  /** Each alert's `email_status`: its address's state for an e-mail alert, null for the other channels (one query). */
  async statusesFor(userId: Types.ObjectId, alerts: readonly { channel?: string; webhook_url: string }[]): Promise<(EmailState | null)[]> {
    const addressOf = (a: { channel?: string; webhook_url: string }) =>
      a.channel === 'email' ? a.webhook_url.replace(/^mailto:/, '') : null;
    const states = await this.statesOf(
      userId,
      alerts.flatMap((a) => addressOf(a) ?? []),
    );
    return alerts.map((a) => {
      const address = addressOf(a);
      return address === null ? null : (states.get(address) ?? 'pending');
    });
  }

  /** What a link names, for its page (GET): nothing changes. */
  async inspect(token: string, purpose: LinkPurpose): Promise<LinkResult> {
    const found = await this.open(token, purpose);
    return 'record' in found ? { ok: true, address: found.record.address, state: found.record.state } : found.result;
  }

  /**
   * The confirmation link's POST: the address becomes `confirmed` (again), unless the link was
   * issued before the address was last unsubscribed or bounced. Confirming twice is confirming.
   */
  async confirm(token: string): Promise<LinkResult> {
    const found = await this.open(token, 'confirm');
    if (!('record' in found)) return found.result;
    const issued = new Date(found.issuedAt);
    const updated = await this.records
      .findOneAndUpdate(
        { _id: found.record._id, $or: [{ closed_at: null }, { closed_at: mongoose.trusted({ $lte: issued }) }] },
        { $set: { state: 'confirmed', bounces: 0, confirmed_at: new Date(this.now()) } },
        { returnDocument: 'after' },
      )
      .lean();
    if (!updated) return STALE;
    this.deps.logger.info({ email_address: updated._id.toHexString() }, 'e-mail address confirmed');
    return { ok: true, address: updated.address, state: updated.state };
  }

  /** The one-click unsubscribe (RFC 8058) and its page's button: the account mails the address no more. */
  async unsubscribe(token: string): Promise<LinkResult> {
    const found = await this.open(token, 'unsubscribe');
    if (!('record' in found)) return found.result;
    const updated = await this.records
      .findOneAndUpdate(
        { _id: found.record._id },
        { $set: { state: 'unsubscribed', closed_at: new Date(this.now()) } },
        { returnDocument: 'after' },
      )
      .lean();
    if (!updated) return UNKNOWN;
    this.deps.logger.info({ email_address: updated._id.toHexString() }, 'e-mail address unsubscribed');
    return { ok: true, address: updated.address, state: updated.state };
  }

  /** Resolves when every confirmation mail under way has been sent or given up (shutdown, tests). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** The account's record of the address, made `pending` if it has none (concurrent callers meet at the unique index). */
  private async ensure(userId: Types.ObjectId, address: string): Promise<Record_> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const doc = await this.write(
          this.records
            .findOneAndUpdate(
              { user_id: userId, address },
              { $setOnInsert: { state: 'pending' } },
              { upsert: true, returnDocument: 'after', setDefaultsOnInsert: true },
            )
            .lean()
            .exec(),
        );
        if (doc) return doc;
      } catch (err) {
        // Two upserts of one new record: the loser's insert hits the unique index; read the winner's.
        if (!isDuplicateKey(err) || attempt > 0) throw err;
      }
    }
    throw new Error('the e-mail address record was neither inserted nor found');
  }

  /**
   * Takes the day's confirmation mail of the record (a conditional write, so concurrent posts send
   * one), and sends it in the background. A mail that does not go (a cap, an SMTP failure) gives
   * the day's place back, so the next post tries again.
   */
  private async requestConfirmation(record: Record_): Promise<void> {
    const at = new Date(this.now());
    const claimed = await this.write(
      this.records
        .updateOne(
          {
            _id: record._id,
            state: mongoose.trusted({ $ne: 'confirmed' }),
            $or: [
              { confirmation_sent_at: null },
              { confirmation_sent_at: mongoose.trusted({ $lte: new Date(at.getTime() - CONFIRMATION_INTERVAL_MS) }) },
            ],
          },
          { $set: { confirmation_sent_at: at } },
        )
        .exec(),
    );
    if (claimed.modifiedCount !== 1) return;
    const sending = this.sendConfirmation(record, at).catch(async (err: Error) => {
      this.deps.logger.warn(
        { email_address: record._id.toHexString(), err: { name: err.name, message: err.message } },
        'confirmation mail not sent',
      );
      await this.records
        .updateOne({ _id: record._id, confirmation_sent_at: at }, { $set: { confirmation_sent_at: record.confirmation_sent_at } })
        .catch(() => undefined);
    });
    this.inFlight.add(sending);
    void sending.finally(() => this.inFlight.delete(sending));
  }

  private async sendConfirmation(record: Record_, at: Date): Promise<void> {
    const { alerts, http } = this.deps.config;
    const cap = await this.caps.take(record.user_id.toHexString(), record.address, at.getTime());
    if (!cap.ok) throw new EmailNotSentError(`the daily ${cap.cap} cap of ${cap.limit} e-mails is reached`, `${cap.cap}_cap`);
    const confirm = this.link(record, 'confirm', at.getTime(), at.getTime() + alerts.email.confirmTtlMs);
    const pass = this.pass(record);
    const content = confirmationContent({
      address: record.address,
      server: new URL(http.appUrl!).host,
      confirmUrl: confirm,
      unsubscribeUrl: pass.unsubscribeUrl,
      validDays: Math.max(1, Math.round(alerts.email.confirmTtlMs / 86_400_000)),
    });
    await sendEmail(alerts.smtp, {
      to: record.address,
      deliveryId: `confirm.${record._id.toHexString()}.${at.getTime()}`,
      content,
      timeoutMs: alerts.timeoutMs,
      headers: pass.headers,
    });
    this.deps.logger.info({ email_address: record._id.toHexString() }, 'confirmation mail sent');
  }

  /** RFC 8058: the one-click URL in angle brackets, and the header that says a POST to it unsubscribes. */
  private pass(record: Pick<Record_, '_id'>): MailPass {
    const now = this.now();
    const unsubscribeUrl = this.link(record, 'unsubscribe', now, now + UNSUBSCRIBE_TTL_MS);
    return {
      unsubscribeUrl,
      headers: { 'List-Unsubscribe': `<${unsubscribeUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    };
  }

  private link(record: Pick<Record_, '_id'>, purpose: LinkPurpose, issuedAt: number, expiresAt: number): string {
    const token = signLink(this.deps.appKey, { purpose, recordId: record._id.toHexString(), issuedAt, expiresAt });
    return linkUrl(this.deps.config.http.appUrl ?? '', purpose, token);
  }

  /** The record a link of `purpose` names, when the link verifies and the record exists. */
  private async open(token: string, purpose: LinkPurpose): Promise<{ record: Record_; issuedAt: number } | { result: LinkResult }> {
    const checked = verifyLink(this.deps.appKey, token, this.now());
    if (!checked.ok) return { result: checked.why === 'expired' ? EXPIRED : INVALID };
    if (checked.claims.purpose !== purpose) return { result: INVALID };
    const record = await this.records.findById(new Types.ObjectId(checked.claims.recordId)).lean();
    return record ? { record, issuedAt: checked.claims.issuedAt } : { result: UNKNOWN };
  }

  private write<T>(p: Promise<T>): Promise<T> {
    return withTimeout(p, DELIVERY_DB_TIMEOUT_MS, 'e-mail address write');
  }
}

/** Why a mail to an address in `state` does not go. */
function refusal(state: Exclude<EmailState, 'confirmed'>): EmailNotSentError {
  switch (state) {
    case 'pending':
      return new EmailNotSentError(
        "the address is awaiting its owner's confirmation: nothing is mailed to it until the link mailed to it is opened and confirmed",
        'pending',
      );
    case 'unsubscribed':
      return new EmailNotSentError(
        "the address's owner unsubscribed it; posting the alert again mails them a new confirmation link",
        'unsubscribed',
      );
    case 'bounced':
      return new EmailNotSentError(
        "the address's mail server refused mail permanently (EMAIL_BOUNCE_LIMIT times in a row); posting the alert again mails a new confirmation link",
        'bounced',
      );
  }
}

/** The test button's answer for a mail the gate refused: 409 for the address's state, 429 for a cap. */
export function testRefusalAnswer(err: EmailNotSentError): HttpError {
  const message = `No test mail was sent: ${err.message}.`;
  if (err.retryAfterSeconds !== null) return new TooManyRequestsError(message, err.retryAfterSeconds);
  return new ConflictError(message);
}
