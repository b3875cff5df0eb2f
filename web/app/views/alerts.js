/* global document */
// Alerts: the form that creates one (or edits one: the API changes an alert's threshold or target
// by a new alert and the old one's deletion), and each alert with Test, Pause/Resume, Edit, Delete.

import { api, enc } from '../lib/api.js';
import { $, el, button, focusOn, showFormError, clearFormError } from '../lib/dom.js';
import { formatDateTime, formatNumber } from '../lib/format.js';
import { partOf } from './products.js';

const CHANNEL_NAMES = {
  webhook: 'Webhook',
  slack: 'Slack',
  discord: 'Discord',
  teams: 'Teams',
  ntfy: 'ntfy',
  telegram: 'Telegram',
  email: 'E-mail',
};
const EMAIL_STATES = {
  pending: 'pending confirmation: nothing is mailed until its owner confirms',
  confirmed: 'confirmed',
  unsubscribed: 'unsubscribed by its owner',
  bounced: 'bounced: its mail server refuses mail',
};
const NUMBER_FIELDS = ['price', 'percent', 'amount', 'rank', 'days'];

/** The alert being edited, or null when the form creates one. */
let editing = null;

export function describeAlert(a) {
  if (a.kind === 'price_below') return `price below ${formatNumber(a.price)} (minor units)`;
  const move = a.percent !== null ? `${a.percent} %` : `${formatNumber(a.amount)} (minor units)`;
  const against =
    a.reference && a.reference !== 'previous' ? ` against the ${a.reference.replace('_', ' ')}${a.days ? ` of ${a.days} days` : ''}` : '';
  if (a.kind === 'price_drop') return `price drops by ${move}${against}`;
  if (a.kind === 'price_rise') return `price rises by ${move}${against}`;
  if (a.kind === 'back_in_stock') return 'back in stock';
  if (a.kind === 'out_of_stock') return 'out of stock';
  if (a.kind === 'buybox_change') return 'Buy Box changes';
  if (a.kind === 'rank_below') return `sales rank ${formatNumber(a.rank)} or better`;
  if (a.kind === 'rank_above') return `sales rank worse than ${formatNumber(a.rank)}`;
  return 'any change';
}

/** Where the alert delivers: a chat target comes redacted from the API. */
function channelLabel(alert) {
  const channel = alert.channel ?? 'webhook';
  return `${CHANNEL_NAMES[channel] ?? channel}: ${channel === 'email' ? alert.email : alert.webhook_url}`;
}

/** What a test delivery came to: its `outcome`, and the status it got. */
function testResultText(alert, data) {
  const protocol = alert.channel === 'email' ? 'SMTP' : 'HTTP';
  const took = typeof data.duration_ms === 'number' ? ` in ${data.duration_ms} ms` : '';
  if (typeof data.outcome === 'string') {
    const status = data.status === null || data.status === undefined ? '' : ` (${protocol} ${data.status})`;
    return {
      text: `Test ${data.outcome.replaceAll('_', ' ')}${status}${took}.`,
      failed: data.ok === false || data.outcome !== 'delivered',
    };
  }
  const answered = data.status === null || data.status === undefined ? 'no answer' : `${protocol} ${data.status}`;
  const failed = !data.ok;
  return { text: `Receiver answered ${answered}${took}: ${failed ? `failed${data.error ? ` (${data.error})` : ''}` : 'OK'}.`, failed };
}

async function testAlert(alert, control, result) {
  control.disabled = true;
  result.textContent = 'Sending a test delivery…';
  result.classList.remove('error');
  try {
    const { data } = await api(`alerts/${enc(alert.id)}/test`, { method: 'POST' });
    const { text, failed } = testResultText(alert, data ?? {});
    result.textContent = text;
    result.classList.toggle('error', failed);
  } catch (err) {
    result.textContent = `Test not sent: ${err.message}`;
    result.classList.add('error');
  } finally {
    control.disabled = false;
  }
}

/** An action on one alert, then the page again, focus back where the person was. */
async function act(app, alert, control, result, call, status, focus) {
  control.disabled = true;
  try {
    await call();
    await app.reload({ status, focus });
  } catch (err) {
    control.disabled = false;
    result.textContent = err.message;
    result.classList.add('error');
  }
}

function stateText(alert) {
  const parts = [];
  if (alert.paused) parts.push('paused');
  if (!alert.active) parts.push(`inactive: ${alert.disabled_reason ?? 'endpoint disabled'}`);
  if (alert.channel === 'email' && alert.email_status) parts.push(`address ${EMAIL_STATES[alert.email_status] ?? alert.email_status}`);
  return parts.length ? parts.join(' · ') : 'active';
}

function showAlert(app, alert, list) {
  const article = el('article', null, { 'data-alert': alert.id });
  const headingId = `alert-${alert.id}`;
  const selector = `article[data-alert="${alert.id}"]`;
  article.append(el('h3', `${alert.asin} (${alert.country}): ${describeAlert(alert)}`, { id: headingId }));
  article.append(el('p', channelLabel(alert)));
  article.append(el('p', stateText(alert), { class: `state${alert.email_status === 'pending' || !alert.active ? ' warn' : ''}` }));
  const result = el('p', '', { class: 'result', role: 'status', 'aria-live': 'polite' });
  const test = button('Test', { 'aria-describedby': headingId });
  test.addEventListener('click', () => testAlert(alert, test, result));
  const pause = button(alert.paused ? 'Resume' : 'Pause', { 'aria-describedby': headingId, class: 'pause' });
  pause.addEventListener('click', () =>
    act(
      app,
      alert,
      pause,
      result,
      () => api(`alerts/${enc(alert.id)}`, { method: 'PATCH', body: { paused: !alert.paused } }),
      `${alert.paused ? 'Resumed' : 'Paused'} the alert on ${alert.asin}.`,
      () => document.querySelector(`${selector} button.pause`),
    ),
  );
  const edit = button('Edit', { 'aria-describedby': headingId });
  edit.addEventListener('click', () => startEditing(alert));
  const remove = button('Delete', { 'aria-describedby': headingId, class: 'danger' });
  remove.addEventListener('click', () =>
    act(
      app,
      alert,
      remove,
      result,
      () => api(`alerts/${enc(alert.id)}`, { method: 'DELETE' }),
      `Deleted the alert on ${alert.asin}.`,
      () => $('alerts-heading'),
    ),
  );
  article.append(el('p', null, { class: 'actions' }, test, pause, edit, remove), result, el('h4', 'Latest delivery'));
  list.append(article);
  const d = alert.latest_delivery;
  if (!d) {
    article.append(el('p', 'No deliveries yet.'));
    return;
  }
  const answer = d.response_code ? `HTTP ${d.response_code}` : 'no answer';
  const error = d.last_error ? ` (${d.last_error})` : '';
  article.append(el('p', `${formatDateTime(d.created_at)}: ${d.status}, ${d.attempts} attempt(s), ${answer}${error}`));
}

// --- the form ------------------------------------------------------------------------------------

const form = () => $('alert-form');
const field = (name) => form().elements.namedItem(name);

/** Shows the fields the kind and channel take, and only those. */
function showFields() {
  const kind = field('kind').value;
  const channel = field('channel').value;
  for (const box of form().querySelectorAll('[data-for]')) box.hidden = !box.dataset.for.split(' ').includes(kind);
  for (const box of form().querySelectorAll('[data-channel]')) box.hidden = !box.dataset.channel.split(' ').includes(channel);
}

/** The body of POST /api/alerts from the fields shown. */
function bodyOf() {
  const body = { asin: field('asin').value.trim().toUpperCase(), country: field('country').value, kind: field('kind').value };
  body.channel = field('channel').value;
  body.paused = field('paused').checked;
  for (const input of form().querySelectorAll('input:not([type="checkbox"]), select')) {
    if (input.closest('[hidden]') || ['asin', 'country', 'kind', 'channel'].includes(input.name) || !input.name) continue;
    const value = input.value.trim();
    if (value === '') continue;
    body[input.name] = NUMBER_FIELDS.includes(input.name) && /^\d+$/.test(value) ? Number(value) : value;
  }
  if (body.reference === 'previous') delete body.reference;
  return body;
}

function startEditing(alert) {
  editing = alert;
  const f = form();
  f.reset();
  clearFormError(f);
  for (const name of ['asin', 'country', 'kind', 'channel', ...NUMBER_FIELDS]) {
    if (alert[name] !== null && alert[name] !== undefined) field(name).value = String(alert[name]);
  }
  if (alert.reference) field('reference').value = alert.reference;
  field('paused').checked = alert.paused;
  // A chat target comes redacted, and a token never: they are typed again.
  if (alert.channel === 'webhook') field('webhook_url').value = alert.webhook_url ?? '';
  if (alert.channel === 'email') field('email').value = alert.email ?? '';
  showFields();
  $('alert-form-heading').textContent = `Edit the alert on ${alert.asin} (${alert.country})`;
  $('alert-submit').textContent = 'Save the alert';
  $('alert-cancel').hidden = false;
  focusOn(field('asin'));
}

function stopEditing() {
  editing = null;
  form().reset();
  clearFormError(form());
  showFields();
  $('alert-form-heading').textContent = 'New alert';
  $('alert-submit').textContent = 'Create alert';
  $('alert-cancel').hidden = true;
}

async function submit(app) {
  const f = form();
  clearFormError(f);
  const body = bodyOf();
  const submitButton = $('alert-submit');
  submitButton.disabled = true;
  try {
    const { data } = await api('alerts', { method: 'POST', body });
    const old = editing;
    if (old && old.id !== data.id) await api(`alerts/${enc(old.id)}`, { method: 'DELETE' });
    stopEditing();
    const pending =
      data.channel === 'email' && data.email_status === 'pending'
        ? ` A confirmation link was mailed to ${data.email}; it gets alerts once confirmed.`
        : '';
    await app.reload({
      status: `${old ? 'Saved' : 'Created'} the alert on ${data.asin}.${pending}`,
      focus: () => $(`alert-${data.id}`),
    });
  } catch (err) {
    showFormError(f, err);
  } finally {
    submitButton.disabled = false;
  }
}

export function render(app, summary) {
  const countries = field('country');
  const chosen = countries.value;
  countries.replaceChildren(...summary.countries.map((c) => el('option', c, { value: c })));
  if (summary.countries.includes(chosen)) countries.value = chosen;
  $('alert-asins').replaceChildren(...summary.products.items.map((p) => el('option', null, { value: p.watch.asin })));
  const list = $('alert-list');
  list.replaceChildren();
  const { items, total } = summary.alerts;
  if (items.length === 0) list.append(el('p', 'No alerts.'));
  for (const a of items) showAlert(app, a, list);
  const part = partOf(items.length, total, 'alerts');
  if (part) list.append(part);
}

export function clear() {
  stopEditing();
  $('alert-list').replaceChildren();
}

export function init(app) {
  const f = form();
  f.addEventListener('change', (event) => {
    if (event.target.name === 'kind' || event.target.name === 'channel') showFields();
  });
  f.addEventListener('submit', (event) => {
    event.preventDefault();
    void submit(app);
  });
  $('alert-cancel').addEventListener('click', () => {
    stopEditing();
    focusOn($('alert-form-heading'));
  });
  showFields();
}
