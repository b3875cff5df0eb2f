/**
 * One attempt of a delivery on its endpoint's channel: the only place the channels differ. The
 * delivery job and the test button call this, and judge every channel's answer the same way
 * (types.ts), so retries, disabling, records and fairness are the webhook's for all of them. Every
 * URL goes through postJson's address guard; e-mail goes to the operator's SMTP server, to an
 * address its owner confirmed and within the daily caps (the gate, email-addresses.ts).
 */
import type { Config } from '../../../../config/env.js';
import { DELIVERY_MAX_RESPONSE_BYTES } from '../../../../config/alerts.js';
import type { AlertChannel } from '../../../models/alert.js';
import { isDigest, type SentContent } from '../payload.js';
import type { Country } from '../../../core/identifiers.js';
import { digestEmail, digestMessage, digestRequest } from './digest.js';
import { digestWebhookBody, webhookBody } from '../present.js';
import { postJson, sendWebhook, type HostResolver, type PostResponse } from '../send-webhook.js';
import { alertMessage, type AlertMessage, type ProductLabel } from './message.js';
import { emailContent, sendEmail } from './email.js';
import { slack } from './slack.js';
import { discord } from './discord.js';
import { teams } from './teams.js';
import { ntfy, ntfyRequest } from './ntfy.js';
import { telegram, telegramRequest } from './telegram.js';
import { retryAfterMs, type ChannelAnswer, type ChatAnswers, type ChatRequest, type ChatService } from './types.js';
import type { EmailGate } from '../../endpoints/email-addresses.js';
import { openedTarget, type ChatTarget, type HookChannel } from '../../endpoints/target.js';
import { EmailDeliveryError } from '../../../core/errors.js';

const HOOKS: Readonly<Record<HookChannel, ChatService>> = { slack, discord, teams };

/** The generic webhook's one "gone" status, worded as before channels existed. */
const WEBHOOK_GONE: Readonly<Record<number, string>> = { 410: 'Gone' };

export interface ChannelSend {
  readonly channel: AlertChannel;
  /** The webhook's URL, the address to mail, or a chat service's sealed target opened (endpoints/target.ts). */
  readonly target: string;
  /** The webhook's signing secrets (the other channels are not signed). */
  readonly secrets: readonly string[];
  /** The delivery's id: the webhook-id, and the e-mail's Message-ID. */
  readonly id: string;
  readonly content: SentContent;
  /** A sample from the test button. */
  readonly test: boolean;
  /** A product's title and page, read only by the channels that write to a person. */
  readonly product: (country: Country, asin: string) => Promise<ProductLabel>;
}

export interface ChannelOptions {
  readonly config: Pick<Config, 'alerts' | 'timeZone'>;
  /** Where hosts resolve at connection time: the account's HostLookups. */
  readonly resolve?: HostResolver;
  /** What every e-mail passes first (src/alerts/endpoints/email-addresses.ts): without it no e-mail goes. */
  readonly mail?: EmailGate;
}

function judged(answer: PostResponse, service: ChatAnswers | null, wording: (why: string) => string): ChannelAnswer {
  const { status, durationMs } = answer;
  if (status >= 200 && status < 300) return { status, durationMs, verdict: 'ok', reason: null };
  // Every receiver may ask for a wait with Retry-After on a 429 or a 503 (RFC 9110): Slack's and
  // Discord's rate limits do, and so may a webhook's receiver. A service's own reader knows more.
  const read = service?.reads?.(answer) ?? (status === 429 || status === 503 ? { retryAfterMs: retryAfterMs(answer.retryAfter) } : {});
  const why = (service?.gone ?? WEBHOOK_GONE)[status] ?? read.gone;
  if (why !== undefined) return { status, durationMs, verdict: 'gone', reason: `the receiver answered ${status}${wording(why)}` };
  const wait = read.retryAfterMs ?? null;
  const asked = wait === null ? '' : ` (it asked for a wait of ${Math.ceil(wait / 1_000)} s)`;
  return { status, durationMs, verdict: 'failed', reason: `the receiver answered ${status}${asked}`, retryAfterMs: wait };
}

/** The chat service of a target, and the POST that carries `message` to it. */
function chatRequest(message: AlertMessage, target: ChatTarget, telegramApiUrl: string): { service: ChatAnswers; request: ChatRequest } {
  if (target.channel === 'ntfy') return { service: ntfy, request: ntfyRequest(message, target) };
  if (target.channel === 'telegram') return { service: telegram, request: telegramRequest(message, target, telegramApiUrl) };
  const service = HOOKS[target.channel];
  return { service, request: { url: target.url, body: service.payload(message) } };
}

/**
 * `err` without `secret` in its message: a Telegram bot token is in the URL's path, and no error
 * postJson makes names a path, but a record or a log line must not show it whatever Node words.
 */
function scrubbed(err: unknown, secret: string): unknown {
  if (err instanceof Error && err.message.includes(secret)) err.message = err.message.split(secret).join('[bot token]');
  return err;
}

/**
 * Sends `send` once. Resolves with the receiver's answer, judged; rejects (WebhookDeliveryError,
 * WebhookTargetRefusedError, EmailDeliveryError) when no answer came: a refused address, a network
 * failure, a timeout, an SMTP refusal.
 */
export async function sendOnChannel(send: ChannelSend, opts: ChannelOptions): Promise<ChannelAnswer> {
  const { alerts, timeZone } = opts.config;
  const post = {
    url: send.target,
    timeoutMs: alerts.timeoutMs,
    maxResponseBytes: DELIVERY_MAX_RESPONSE_BYTES,
    allowPrivate: alerts.allowPrivate,
    allowedPorts: alerts.allowedPorts,
    resolve: opts.resolve,
  };
  const content = send.content;
  if (send.channel === 'webhook') {
    const payload = isDigest(content) ? digestWebhookBody(content, timeZone) : webhookBody(content, timeZone, { test: send.test });
    const body = JSON.stringify(payload);
    const answer = await sendWebhook({ ...post, body, secret: send.secrets, id: send.id, timestamp: new Date() });
    return judged(answer, null, (why) => ` ${why}`);
  }
  if (send.channel === 'email') {
    if (!opts.mail) throw new EmailDeliveryError('e-mail is not sent without the address checks', null);
    // Before anything is read or sent: an address that has not said yes costs nothing more.
    const pass = await opts.mail.admit(content.user_id, send.target);
    const mail = isDigest(content)
      ? digestEmail(await digestMessage(content, send.product, timeZone), pass.unsubscribeUrl)
      : emailContent(alertMessage(content, await send.product(content.country, content.asin), timeZone, send.test), pass.unsubscribeUrl);
    return sendEmail(alerts.smtp, {
      to: send.target,
      deliveryId: send.id,
      content: mail,
      timeoutMs: alerts.timeoutMs,
      headers: pass.headers,
    });
  }
  const target = openedTarget(send.channel, send.target);
  const { service, request } = isDigest(content)
    ? digestRequest(await digestMessage(content, send.product, timeZone), target, alerts.telegramApiUrl)
    : chatRequest(
        alertMessage(content, await send.product(content.country, content.asin), timeZone, send.test),
        target,
        alerts.telegramApiUrl,
      );
  const secret = target.channel === 'telegram' ? target.botToken : null;
  try {
    const body = JSON.stringify(request.body);
    const answer = await postJson({ ...post, url: request.url, body, headers: request.headers, keepBody: service.reads !== undefined });
    return judged(answer, service, (why) => `: ${why}`);
  } catch (err) {
    throw secret === null ? err : scrubbed(err, secret);
  }
}
