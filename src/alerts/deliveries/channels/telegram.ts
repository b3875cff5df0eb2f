/**
 * Telegram bots (https://core.telegram.org/bots/api#sendmessage): `POST <TELEGRAM_API_URL>/bot<token>/sendMessage`
 * with `{chat_id, text, parse_mode: "HTML", link_preview_options: {is_disabled: true}}`.
 *
 * HTML rather than MarkdownV2: in HTML mode only `&`, `<` and `>` need escaping
 * (https://core.telegram.org/bots/api#html-style), where MarkdownV2 has eighteen characters that
 * must be escaped and refuses the whole message over one missed. Every text, the product's title
 * above all (the upstream's text), is escaped, so it can neither format nor link; the one link is
 * ours, the product's page, its URL attribute-escaped.
 *
 * The bot token is in the URL's path: it is a credential, so this URL is built only here, at the
 * moment of the request, and never put in a record, an error or a log line (dispatch.ts scrubs it
 * from any error that would carry it).
 */
import { z } from 'zod';
import type { ChatTarget } from '../../endpoints/target.js';
import type { AlertMessage } from './message.js';
import { retryAfterMs, type AnswerReading, type ChatAnswers, type ChatRequest, type ServiceAnswer } from './types.js';

type TelegramTarget = Extract<ChatTarget, { channel: 'telegram' }>;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Text for HTML mode: the three characters Telegram reads as markup, as the entities it takes. */
export function telegramText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A URL inside `href="…"`: a `"` would end the attribute. */
function attribute(url: string): string {
  return telegramText(url).replace(/"/g, '&quot;');
}

export function telegramPayload(m: AlertMessage, chatId: string) {
  const lines = [
    `<b>${m.test ? '[Test] ' : ''}${telegramText(m.what)}</b>`,
    telegramText(cut(m.product, 500)),
    telegramText(m.change),
    `<a href="${attribute(m.link)}">${telegramText(m.asin)}</a> · ${telegramText(`${m.country} · ${m.at}`)}`,
  ];
  return {
    // A numeric id as the Integer the API documents; a channel's @username as a String.
    chat_id: /^-?\d+$/.test(chatId) ? Number(chatId) : chatId,
    text: lines.join('\n'),
    parse_mode: 'HTML',
    link_preview_options: { is_disabled: true },
  };
}

/** The sendMessage call; `apiUrl` is TELEGRAM_API_URL. */
export function telegramRequest(m: AlertMessage, target: TelegramTarget, apiUrl: string): ChatRequest {
  return { url: `${apiUrl}/bot${target.botToken}/sendMessage`, body: telegramPayload(m, target.chatId) };
}

/** The Bot API's error answer: `{ok: false, error_code, description, parameters?: {retry_after, migrate_to_chat_id}}`. */
const errorAnswer = z.object({
  description: z.string().optional(),
  parameters: z.object({ retry_after: z.number().optional(), migrate_to_chat_id: z.number().optional() }).optional(),
});

/**
 * The 400s that say the chat cannot be written to, in our words (an answer shows ours, never the
 * remote's text); any other 400 (a message the API could not parse) is retried like a 5xx.
 */
const GONE_CHATS: readonly [RegExp, string][] = [
  [/chat not found/i, 'the Telegram chat was not found (a wrong chat id, or the bot was never added to it)'],
  [/chat_id is empty/i, 'the Telegram chat id is empty'],
  [/upgraded to a supergroup/i, 'the Telegram group became a supergroup, which has another chat id'],
  [/not enough rights/i, 'the Telegram bot may not send messages in this chat'],
];

function readAnswer(answer: ServiceAnswer): AnswerReading {
  let parsed: z.infer<typeof errorAnswer> = {};
  try {
    parsed = errorAnswer.catch({}).parse(JSON.parse(answer.body));
  } catch {
    // Not JSON (a proxy's page): the status alone is judged.
  }
  if (answer.status === 400) {
    const description = parsed.description ?? '';
    const gone = GONE_CHATS.find(([pattern]) => pattern.test(description));
    return gone ? { gone: gone[1] } : {};
  }
  if (answer.status === 429) {
    const seconds = parsed.parameters?.retry_after;
    return { retryAfterMs: seconds !== undefined && seconds > 0 ? seconds * 1_000 : retryAfterMs(answer.retryAfter) };
  }
  return {};
}

export const telegram: ChatAnswers = {
  name: 'Telegram',
  gone: {
    401: 'Telegram refused the bot token (revoked, or not a bot token)',
    // "bot was blocked by the user", "bot was kicked from the group chat", "bot is not a member of the channel chat".
    403: 'the Telegram bot was blocked, or removed from the chat',
  },
  reads: readAnswer,
};
