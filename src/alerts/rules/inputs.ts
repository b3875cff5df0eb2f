import { z } from 'zod';
import type { Config } from '../../../config/env.js';
import { durationOrZero } from '../../../config/parsers.js';
import { ValidationError } from '../../core/errors.js';
import { asinSchema, type Country } from '../../core/identifiers.js';
import { ALERT_CHANNELS, ALERT_KINDS, ALERT_REFERENCES, type AlertChannel } from '../../models/alert.js';
import { targetUrlSchema } from '../endpoints/target-url.js';
import { ntfyTopicOf, type AlertTarget } from '../endpoints/target.js';
import { alertRecordSchema, createdAlertSchema } from './present.js';

/** A whole number from a JSON number or a form field's text. */
const wholeNumber = (min: number, max: number, error = `must be a whole number from ${min} to ${max}.`) =>
  z
    .union([z.number(), z.string().regex(/^\d+$/).transform(Number)], { error })
    .pipe(z.number({ error }).int({ error }).min(min, { error }).max(max, { error }));

/** A boolean from JSON or a form field's text. */
const flag = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')], {
  error: 'must be true or false.',
});

const MAX_REARM_AFTER_MS = 30 * 86_400_000;
const REARM_AFTER_MESSAGE = 'must be a duration such as 30m, 6h or 1d, from 1s to 30d.';
/** A duration as the configuration writes them ("6h"), kept as posted and in ms. */
const rearmAfter = z
  .string({ error: REARM_AFTER_MESSAGE })
  .regex(/^\d+(ms|s|m|h|d)?$/, REARM_AFTER_MESSAGE)
  .transform((text) => ({ text, ms: durationOrZero.parse(text) }))
  .refine((v) => v.ms >= 1_000 && v.ms <= MAX_REARM_AFTER_MS, REARM_AFTER_MESSAGE)
  .meta({ override: { type: 'string', pattern: '^\\d+(ms|s|m|h|d)?$' } });

const EMAIL_MESSAGE = 'must be a valid e-mail address.';
/** One address; its domain in lower case, so that one mailbox is one endpoint however it is written. */
const emailAddress = z
  .string({ error: EMAIL_MESSAGE })
  .trim()
  .max(254, { error: 'must not be greater than 254 characters.' })
  .pipe(z.email({ error: EMAIL_MESSAGE }))
  .transform((v) => {
    const at = v.lastIndexOf('@');
    return `${v.slice(0, at)}${v.slice(at).toLowerCase()}`;
  });

/** A bot token as @BotFather gives it: the bot's id, a colon, and its secret (35 characters today). */
const BOT_TOKEN_MESSAGE = 'must be a bot token as @BotFather gives it (the bot id, a colon, then at least 30 letters, digits, - or _).';
const botToken = z
  .string({ error: BOT_TOKEN_MESSAGE })
  .trim()
  .regex(/^\d{1,20}:[A-Za-z0-9_-]{30,128}$/, { error: BOT_TOKEN_MESSAGE });

const CHAT_ID_MESSAGE = 'must be a chat id (an integer such as -1001234567890) or a public channel as @channelname.';
/** A chat's id, or a public channel's @username (5–32 letters, digits or _), in lower case as Telegram matches it. */
const chatId = z
  .union([z.number(), z.string()], { error: CHAT_ID_MESSAGE })
  .transform((v) => (typeof v === 'number' ? (Number.isSafeInteger(v) ? String(v) : '') : v.trim()))
  .refine((v) => /^-?\d{1,20}$/.test(v) || /^@[A-Za-z][A-Za-z0-9_]{4,31}$/.test(v), { error: CHAT_ID_MESSAGE })
  .transform((v) => v.toLowerCase());

const NTFY_TOKEN_MESSAGE = 'must be an ntfy access token (tk_ then letters and digits).';
const ntfyToken = z
  .string({ error: NTFY_TOKEN_MESSAGE })
  .trim()
  .regex(/^tk_[A-Za-z0-9]{8,64}$/, { error: NTFY_TOKEN_MESSAGE });

/** The fields each channel takes besides the ones every channel has: any other target field is refused. */
const CHANNEL_FIELDS = {
  webhook_url: ['webhook', 'slack', 'discord', 'teams', 'ntfy'],
  ntfy_token: ['ntfy'],
  telegram_bot_token: ['telegram'],
  telegram_chat_id: ['telegram'],
  email: ['email'],
} as const satisfies Record<string, readonly AlertChannel[]>;

/** Which kinds take which option: anything else posted with another kind is refused. */
const OPTION_KINDS = {
  price: ['price_below'],
  rearm_above: ['price_below'],
  rearm_after: ['price_below'],
  percent: ['price_drop', 'price_rise'],
  amount: ['price_drop', 'price_rise'],
  reference: ['price_drop', 'price_rise'],
  rank: ['rank_below', 'rank_above'],
} as const;

/**
 * What creating and changing an alert reads (POST and PATCH /api/alerts), with the descriptions
 * the OpenAPI document shows; the webhook URL's rule depends on ENDPOINT_ALLOW_PRIVATE.
 */
export function alertInputs(config: Pick<Config, 'countries' | 'alerts'>) {
  const countries = config.countries;
  const body = z
    .object({
      asin: z
        .string({ error: 'must be a string.' })
        .transform((v) => v.toUpperCase())
        .pipe(asinSchema),
      country: z
        .string({ error: `must be exactly one of ${countries.join(', ')}.` })
        .transform((v) => v.trim().toUpperCase())
        .refine((c): c is Country => countries.includes(c as Country), `must be exactly one of ${countries.join(', ')}.`)
        .meta({ override: { type: 'string', enum: [...countries] } }),
      kind: z.enum(ALERT_KINDS, { error: `must be one of ${ALERT_KINDS.join(', ')}.` }),
      price: wholeNumber(1, 1_000_000_000_000)
        .optional()
        .meta({ description: 'price_below: the threshold in minor units (yen, cents); the alert fires when the price goes below it.' }),
      rank: wholeNumber(1, 100_000_000).optional().meta({
        description:
          'rank_below / rank_above (required for them): the sales rank watched. rank_below fires when the rank comes to this or better (a smaller number) from worse or none; rank_above when it goes worse than this from this or better. Two alerts make a band.',
      }),
      percent: wholeNumber(1, 1_000, 'must be a whole number from 1 to 99 for price_drop, from 1 to 1000 for price_rise.').optional().meta({
        description:
          'price_drop (1–99) / price_rise (1–1000): fires when the price falls / rises at least this many percent against the last point. Exactly one of percent and amount.',
      }),
      amount: wholeNumber(1, 1_000_000_000_000).optional().meta({
        description:
          'price_drop / price_rise: fires when the price falls / rises at least this much (minor units) against the last point. Exactly one of percent and amount.',
      }),
      reference: z
        .enum(ALERT_REFERENCES, { error: `must be one of ${ALERT_REFERENCES.join(', ')}.` })
        .optional()
        .meta({
          description:
            'price_drop / price_rise: what the price is compared against. previous (default): the point before, on every change. lowest / highest: the lowest / highest price of the `days` before the change; at_creation: the price when the alert was posted (the first one seen if the product had none). Against those three it fires when the move is reached, not again while it holds.',
        }),
      days: wholeNumber(1, 365)
        .optional()
        .meta({ description: 'reference lowest / highest (and only those): the window in days, 1–365 (within HISTORY_DAYS).' }),
      rearm_above: wholeNumber(0, 1_000_000_000_000).optional().meta({
        description:
          'price_below: after firing, the alert fires again only once a point is at or above price + rearm_above (minor units). Absent: back at or above price re-arms it.',
      }),
      rearm_after: rearmAfter.optional().meta({
        description:
          'price_below: no second firing within this long of the last (by the points’ times), e.g. "6h"; a crossing within it is dropped, not deferred. From 1s to 30d.',
      }),
      fire_on_create: flag.optional().meta({
        description:
          'true: when the new alert’s condition already holds on the product’s current point (price_below: below the threshold; back_in_stock: in stock; out_of_stock: not in stock; rank_below / rank_above: the rank within / outside the band; price_drop / price_rise and buybox_change: the last change was such a move, or the price is that far from the lowest / highest), one delivery of that point is queued at creation. Not for any_change nor reference at_creation. Default false; only a creation (201) fires.',
      }),
      paused: flag.optional().meta({
        description:
          'true: the alert fires nothing until resumed (false, the default). Resuming fires nothing for changes made while paused.',
      }),
      channel: z
        .enum(ALERT_CHANNELS, { error: `must be one of ${ALERT_CHANNELS.join(', ')}.` })
        .optional()
        .meta({
          description:
            'Where deliveries go. webhook (default): a POST signed with Standard Webhooks to webhook_url, its body a WebhookPayload. slack, discord, teams: a message in the shape that service’s incoming webhook takes (Slack {text, blocks}; Discord {content, embeds}; Teams a message with an Adaptive Card, for a Workflows or incoming webhook) to webhook_url, that service’s webhook URL, which is kept sealed and shown redacted. ntfy: a JSON publish {topic, title, message, priority, tags, click} to the server of webhook_url, an ntfy topic URL, with ntfy_token as a Bearer token when given; both kept sealed, the topic shown redacted. telegram: a sendMessage (HTML) by the bot of telegram_bot_token to telegram_chat_id, through TELEGRAM_API_URL; the token kept sealed and never shown. email: a plain-text and HTML message to `email` through the server’s SMTP (422 when its operator has not configured one).',
        }),
      webhook_url: targetUrlSchema(config.alerts.allowPrivate, config.alerts.allowedPorts)
        .optional()
        .meta({
          description: `Channels webhook (required for it, and the default channel), slack, discord, teams and ntfy (the topic URL, https://ntfy.sh/<topic> or a self-hosted server's): where the POST goes. Not for telegram and email. https, to port ${config.alerts.allowedPorts.join(' or ')} (ENDPOINT_ALLOWED_PORTS; any port where ENDPOINT_ALLOW_PRIVATE is on); it must not resolve to a private, loopback or link-local address.`,
        }),
      ntfy_token: ntfyToken.optional().meta({
        description:
          'Channel ntfy (optional, and only for it): an access token (tk_…) for a protected topic, sent as `Authorization: Bearer`. Kept sealed with the topic URL, never shown.',
      }),
      telegram_bot_token: botToken.optional().meta({
        description:
          'Channel telegram (required for it, and only for it): the bot token @BotFather gave (`123456789:AA…`). A credential: kept sealed, never shown; answers show the bot id only.',
      }),
      telegram_chat_id: chatId.optional().meta({
        description:
          'Channel telegram (required for it, and only for it): the chat the bot writes to, an integer (a user, group or channel id such as -1001234567890) or a public channel as `@channelname`.',
      }),
      email: emailAddress.optional().meta({ description: 'Channel email (required for it, and only for it): the address.' }),
    })
    .superRefine((a, ctx) => {
      const channel = a.channel ?? 'webhook';
      const required = (field: keyof typeof CHANNEL_FIELDS, message = `is required for channel ${channel}.`) => {
        if (a[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message });
      };
      if (channel === 'email') required('email');
      else if (channel === 'telegram') {
        required('telegram_bot_token');
        required('telegram_chat_id');
      } else required('webhook_url', a.channel === undefined ? 'is required.' : undefined);
      for (const [field, channels] of Object.entries(CHANNEL_FIELDS) as [keyof typeof CHANNEL_FIELDS, readonly AlertChannel[]][]) {
        if (a[field] === undefined || channels.includes(channel)) continue;
        const message =
          field === 'webhook_url'
            ? `is not for channel ${channel} (${channel === 'email' ? 'its address goes in email' : 'its bot token and chat id go in telegram_bot_token and telegram_chat_id'}).`
            : `is only for channel ${channels.join(' and ')}.`;
        ctx.addIssue({ code: 'custom', path: [field], message });
      }
      if (channel === 'ntfy' && a.webhook_url !== undefined && ntfyTopicOf(a.webhook_url) === null) {
        ctx.addIssue({
          code: 'custom',
          path: ['webhook_url'],
          message: 'must be an ntfy topic URL such as https://ntfy.sh/<topic> (the topic: 1 to 64 letters, digits, - or _; no query).',
        });
      }
      for (const [field, kinds] of Object.entries(OPTION_KINDS) as [keyof typeof OPTION_KINDS, readonly string[]][]) {
        if (a[field] !== undefined && !kinds.includes(a.kind)) {
          ctx.addIssue({ code: 'custom', path: [field], message: `is only for ${kinds.join(' and ')}.` });
        }
      }
      if (a.fire_on_create === true && (a.kind === 'any_change' || a.reference === 'at_creation')) {
        ctx.addIssue({
          code: 'custom',
          path: ['fire_on_create'],
          message: a.kind === 'any_change' ? 'is not for any_change.' : 'is not for reference at_creation (it cannot hold at creation).',
        });
      }
      if (a.days !== undefined && a.reference !== 'lowest' && a.reference !== 'highest') {
        ctx.addIssue({ code: 'custom', path: ['days'], message: 'is only for reference lowest and highest.' });
      }
      if ((a.kind === 'rank_below' || a.kind === 'rank_above') && a.rank === undefined)
        ctx.addIssue({ code: 'custom', path: ['rank'], message: `is required for ${a.kind}.` });
      if (a.kind === 'price_below' && a.price === undefined)
        ctx.addIssue({ code: 'custom', path: ['price'], message: 'is required for price_below.' });
      if (a.kind === 'price_drop' || a.kind === 'price_rise') {
        if (a.percent === undefined && a.amount === undefined) {
          ctx.addIssue({ code: 'custom', path: ['percent'], message: `is required for ${a.kind}, unless amount is given.` });
        }
        if (a.percent !== undefined && a.amount !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['amount'], message: 'may not be given with percent: give exactly one of them.' });
        }
        const windowed = a.reference === 'lowest' || a.reference === 'highest';
        if (windowed && a.days === undefined)
          ctx.addIssue({ code: 'custom', path: ['days'], message: `is required for reference ${a.reference}.` });
        if (a.kind === 'price_drop' && a.percent !== undefined && a.percent > 99) {
          ctx.addIssue({ code: 'custom', path: ['percent'], message: 'must be a whole number from 1 to 99 for price_drop.' });
        }
      }
    });
  return {
    body,
    patch: z.object({ paused: flag.meta({ description: 'true pauses the alert; false resumes it (re-armed).' }) }),
    id: z.object({ id: z.string().meta({ description: 'The alert id that POST /api/alerts answered.' }) }),
  };
}

/** What a body names as its target. */
interface TargetFields {
  channel?: AlertChannel;
  webhook_url?: string;
  ntfy_token?: string;
  telegram_bot_token?: string;
  telegram_chat_id?: string;
  email?: string;
}

/** Where a validated body delivers: its schema made sure the channel's fields are there. */
export function targetOf(a: TargetFields): AlertTarget {
  const channel = a.channel ?? 'webhook';
  if (channel === 'email') {
    if (a.email === undefined) throw new ValidationError({ email: ['The email field is required for channel email.'] });
    return { channel, address: a.email };
  }
  if (channel === 'telegram') {
    if (a.telegram_bot_token === undefined || a.telegram_chat_id === undefined) {
      throw new ValidationError({ telegram_bot_token: ['The telegram bot token and chat id are required for channel telegram.'] });
    }
    return { channel, botToken: a.telegram_bot_token, chatId: a.telegram_chat_id };
  }
  if (a.webhook_url === undefined)
    throw new ValidationError({ webhook_url: [`The webhook url field is required for channel ${channel}.`] });
  if (channel === 'ntfy') return { channel, url: a.webhook_url, token: a.ntfy_token ?? null };
  return { channel, url: a.webhook_url };
}

export const alertAnswer = z.object({ data: alertRecordSchema }).meta({ id: 'AlertAnswer' });
export const createdAnswer = z.object({ data: createdAlertSchema }).meta({ id: 'CreatedAlertAnswer' });
