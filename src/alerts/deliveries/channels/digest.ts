/**
 * A digest to a person (chat and e-mail): one message listing every held alert, newest first, one
 * line each as an instant message's summary says it. Titles are the upstream's text, so each
 * format carries them as its instant message does: Slack as escaped `plain_text`, Discord with its
 * markdown backslash-escaped and no mention parsed, Teams in TextRuns, ntfy as plain text,
 * Telegram HTML-escaped, e-mail HTML-escaped.
 */
import type { Country } from '../../../core/identifiers.js';
import { formatDateTime } from '../../../core/dates.js';
import { ntfyTopicOf, type ChatTarget } from '../../endpoints/target.js';
import type { DigestContent } from '../payload.js';
import { alertMessage, summaryOf, type AlertMessage, type ProductLabel } from './message.js';
import { html, type EmailContent } from './email.js';
import { slack } from './slack.js';
import { discord, discordText } from './discord.js';
import { teams } from './teams.js';
import { ntfy, ntfyPriority } from './ntfy.js';
import { telegram, telegramText } from './telegram.js';
import type { ChatAnswers, ChatRequest } from './types.js';

export interface DigestMessage {
  /** "3 alerts since the last digest". */
  readonly heading: string;
  /** The window's close, in words, in APP_TIMEZONE. */
  readonly at: string;
  readonly alerts: readonly AlertMessage[];
}

/** Lines a chat message lists at most; the rest are counted ("and 12 more"). */
const MAX_LINES = 40;

const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const entities = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export async function digestMessage(
  content: DigestContent,
  product: (country: Country, asin: string) => Promise<ProductLabel>,
  timeZone: string,
): Promise<DigestMessage> {
  const labels = new Map<string, ProductLabel>();
  const alerts: AlertMessage[] = [];
  for (const item of content.items) {
    const key = `${item.country}.${item.asin}`;
    const label = labels.get(key) ?? (await product(item.country, item.asin));
    labels.set(key, label);
    alerts.push(alertMessage({ ...item, endpoint_id: content.endpoint_id, user_id: content.user_id }, label, timeZone));
  }
  const n = alerts.length;
  return {
    heading: `${n} alert${n === 1 ? '' : 's'} since the last digest`,
    at: formatDateTime(new Date(content.due_at), timeZone),
    alerts,
  };
}

/** The lines shown, and how many more there were. */
function shown(d: DigestMessage): { lines: readonly AlertMessage[]; more: string | null } {
  const more = d.alerts.length - MAX_LINES;
  return { lines: d.alerts.slice(0, MAX_LINES), more: more > 0 ? `and ${more} more` : null };
}

function slackDigest(d: DigestMessage) {
  const { lines, more } = shown(d);
  const list = [...lines.map((m) => `• ${m.summary}`), ...(more ? [more] : [])].join('\n');
  return {
    text: entities(d.heading),
    mrkdwn: false,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*${entities(d.heading)}*` } },
      // At most 2,900 characters, so that escaped it mostly stays within a text object's 3,000.
      { type: 'section', text: { type: 'plain_text', text: cut(entities(cut(list, 2_400)), 3_000), emoji: false } },
    ],
  };
}

function discordDigest(d: DigestMessage) {
  const { lines, more } = shown(d);
  const list = lines.map((m) => `• ${summaryOf(m, (title) => discordText(title))}`);
  return {
    content: cut([`**${discordText(d.heading)}**`, ...list, ...(more ? [more] : [])].join('\n'), 2_000),
    allowed_mentions: { parse: [] },
  };
}

function teamsDigest(d: DigestMessage) {
  const { lines, more } = shown(d);
  const body = [
    { type: 'TextBlock', text: d.heading, weight: 'Bolder', size: 'Medium', wrap: true },
    ...lines.map((m) => ({ type: 'RichTextBlock', inlines: [{ type: 'TextRun', text: `${m.summary} · ${m.link}` }] })),
    ...(more ? [{ type: 'RichTextBlock', inlines: [{ type: 'TextRun', text: more }] }] : []),
  ];
  const card = { $schema: 'http://adaptivecards.io/schemas/adaptive-card.json', type: 'AdaptiveCard', version: '1.4', body };
  return { type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }] };
}

function telegramDigest(d: DigestMessage, chatId: string) {
  const { lines, more } = shown(d);
  const rows = [`<b>${telegramText(d.heading)}</b>`];
  let size = rows[0]!.length;
  for (const m of lines) {
    const row = `• ${telegramText(m.summary)} <a href="${telegramText(m.link).replace(/"/g, '&quot;')}">${telegramText(m.asin)}</a>`;
    // Whole lines only within Telegram's 4,096 characters: a cut could split an entity or a tag.
    if (size + row.length + 1 > 3_900) break;
    rows.push(row);
    size += row.length + 1;
  }
  if (more || rows.length - 1 < lines.length) rows.push(telegramText(`and ${d.alerts.length - (rows.length - 1)} more`));
  return {
    chat_id: /^-?\d+$/.test(chatId) ? Number(chatId) : chatId,
    text: rows.join('\n'),
    parse_mode: 'HTML',
    link_preview_options: { is_disabled: true },
  };
}

/** The digest's POST to a chat target, and how its service's answers are read (as for an instant message). */
export function digestRequest(
  d: DigestMessage,
  target: ChatTarget,
  telegramApiUrl: string,
): { service: ChatAnswers; request: ChatRequest } {
  if (target.channel === 'telegram') {
    return {
      service: telegram,
      request: { url: `${telegramApiUrl}/bot${target.botToken}/sendMessage`, body: telegramDigest(d, target.chatId) },
    };
  }
  if (target.channel === 'ntfy') {
    const topic = ntfyTopicOf(target.url);
    if (topic === null) throw new Error('the ntfy endpoint has no topic');
    const { lines, more } = shown(d);
    const body = {
      topic,
      title: d.heading,
      message: cut([...lines.map((m) => m.summary), ...(more ? [more] : [])].join('\n'), 3_900),
      priority: ntfyPriority(d.alerts.flatMap((m) => m.kinds)),
      tags: ['bookmark_tabs'],
      click: d.alerts[0]!.link,
    };
    return {
      service: ntfy,
      request: {
        url: new URL('./', target.url).href,
        headers: target.token === null ? {} : { authorization: `Bearer ${target.token}` },
        body,
      },
    };
  }
  if (target.channel === 'slack') return { service: slack, request: { url: target.url, body: slackDigest(d) } };
  if (target.channel === 'discord') return { service: discord, request: { url: target.url, body: discordDigest(d) } };
  return { service: teams, request: { url: target.url, body: teamsDigest(d) } };
}

/** One mail listing every alert (all of them: a mail has no length limit worth the cut). */
export function digestEmail(d: DigestMessage, unsubscribeUrl?: string): EmailContent {
  const text = [
    d.heading,
    '',
    ...d.alerts.flatMap((m) => [`${m.what}: ${m.product} (${m.country})`, `  ${m.change} · ${m.at}`, `  ${m.link}`, '']),
    '-- ',
    'Sent by shelfwatch for the alerts of your account, as a digest.',
    ...(unsubscribeUrl ? [`Stop all mail of this account to this address: ${unsubscribeUrl}`] : []),
    '',
  ].join('\n');
  const items = d.alerts.map(
    (m) =>
      `<li><strong>${html(m.what)}</strong>: <a href="${html(m.link)}">${html(m.product)}</a> (${html(m.country)})<br>${html(m.change)} · ${html(m.at)}</li>`,
  );
  const body = [
    '<!doctype html>',
    '<html><body style="font-family:sans-serif;line-height:1.4">',
    `<p><strong>${html(d.heading)}</strong></p>`,
    `<ul>${items.join('')}</ul>`,
    `<p style="color:#666;font-size:0.9em">Sent by shelfwatch for the alerts of your account, as a digest.${
      unsubscribeUrl ? ` <a href="${html(unsubscribeUrl)}">Stop all mail of this account to this address</a>` : ''
    }</p>`,
    '</body></html>',
    '',
  ].join('\n');
  return { subject: `shelfwatch: ${d.heading} (${d.at})`, text, html: body };
}
