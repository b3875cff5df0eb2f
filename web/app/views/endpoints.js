// Endpoints: where alerts deliver, each with its state (active, failing since…, disabled and why;
// an e-mail address's confirmation), re-enabled or deleted here.

import { api, enc } from '../lib/api.js';
import { $, el, button, submitting } from '../lib/dom.js';
import { formatDateTime } from '../lib/format.js';
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
const ADDRESS_STATES = {
  pending: 'pending confirmation',
  confirmed: 'confirmed',
  unsubscribed: 'unsubscribed',
  bounced: 'bounced',
};

function stateText(endpoint, emailStatus) {
  const parts = [];
  if (endpoint.state === 'disabled') {
    parts.push(`disabled since ${formatDateTime(endpoint.disabled_at)}: ${endpoint.disabled_reason ?? 'no reason recorded'}`);
  } else if (endpoint.state === 'failing') parts.push(`failing since ${formatDateTime(endpoint.failing_since)}`);
  else parts.push('active');
  if (emailStatus) parts.push(`address ${ADDRESS_STATES[emailStatus] ?? emailStatus}`);
  parts.push(endpoint.last_success_at ? `last delivered ${formatDateTime(endpoint.last_success_at)}` : 'nothing delivered yet');
  return parts.join(' · ');
}

const DELIVERY_WORDS = { instant: 'alerts as they happen', hourly: 'an hourly digest', daily: 'a daily digest' };

/** How the endpoint takes its alerts, in words: "an hourly digest · quiet 22:00–07:00". */
export function deliveryText(endpoint) {
  const delivery = endpoint.delivery ?? 'instant';
  let text = DELIVERY_WORDS[delivery] ?? delivery;
  if (delivery === 'daily' && endpoint.digest_at) text += ` at ${endpoint.digest_at}`;
  if (endpoint.quiet_hours) text += ` · quiet ${endpoint.quiet_hours.start}–${endpoint.quiet_hours.end}`;
  return text;
}

/** A labelled field of the delivery form; ids carry the endpoint's, so every form's labels are its own. */
function field(labelText, input) {
  return el('p', null, {}, el('label', labelText, { for: input.id }), input);
}

/**
 * The endpoint's delivery settings (PATCH /api/webhooks/{id}): as they happen, or an hourly or
 * daily digest, and quiet hours, in the account's time zone. Names follow the API's fields so that
 * its 422 lands beside the right input.
 */
function deliveryForm(app, endpoint, name) {
  const id = (part) => `endpoint-${endpoint.id}-${part}`;
  const delivery = el('select', null, { id: id('delivery'), name: 'delivery' });
  for (const [value, words] of Object.entries(DELIVERY_WORDS)) delivery.append(el('option', words, { value }));
  delivery.value = endpoint.delivery ?? 'instant';
  const at = el('input', null, { id: id('digest-at'), name: 'digest_at', type: 'time', value: endpoint.digest_at ?? '' });
  const quiet = el('input', null, { id: id('quiet'), name: 'quiet', type: 'checkbox', checked: Boolean(endpoint.quiet_hours) });
  const start = el('input', null, {
    id: id('quiet-start'),
    name: 'quiet_hours.start',
    type: 'time',
    value: endpoint.quiet_hours?.start ?? '',
  });
  const end = el('input', null, { id: id('quiet-end'), name: 'quiet_hours.end', type: 'time', value: endpoint.quiet_hours?.end ?? '' });
  const form = el(
    'form',
    null,
    { class: 'delivery-form', novalidate: true },
    field('Send', delivery),
    field('Daily at (your time zone)', at),
    el('p', null, { class: 'check' }, quiet, el('label', 'Quiet hours: hold alerts, then send them in one digest', { for: quiet.id })),
    field('Quiet from', start),
    field('Quiet until', end),
    el('p', '', { class: 'form-error error', role: 'alert' }),
    el('button', 'Save delivery', { type: 'submit' }),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const body = {
      delivery: delivery.value,
      digest_at: delivery.value === 'daily' ? at.value || null : null,
      quiet_hours: quiet.checked ? { start: start.value, end: end.value } : null,
    };
    void submitting(form, async () => {
      await api(`webhooks/${enc(endpoint.id)}`, { method: 'PATCH', body });
      await app.reload({ status: `Saved how ${name} takes its alerts.`, focus: () => $(`endpoint-${endpoint.id}`) });
    });
  });
  return el('details', null, { class: 'delivery' }, el('summary', `Delivery: ${deliveryText(endpoint)}`), form);
}

async function act(app, control, result, call, status, focus) {
  control.disabled = true;
  result.classList.remove('error');
  try {
    await call();
    await app.reload({ status, focus });
  } catch (err) {
    control.disabled = false;
    result.textContent = err.message;
    result.classList.add('error');
  }
}

function showEndpoint(app, endpoint, users, list) {
  const headingId = `endpoint-${endpoint.id}`;
  const name = `${CHANNEL_NAMES[endpoint.channel] ?? endpoint.channel}: ${endpoint.url.replace(/^mailto:/, '')}`;
  const emailStatus = endpoint.channel === 'email' ? users.find((a) => a.email_status)?.email_status : null;
  const article = el('article', null, { 'data-endpoint': endpoint.id, 'data-state': endpoint.state });
  article.append(el('h3', name, { id: headingId }));
  const warn = endpoint.state !== 'active' || emailStatus === 'pending';
  article.append(el('p', stateText(endpoint, emailStatus), { class: `state${warn ? ' warn' : ''}` }));
  article.append(deliveryForm(app, endpoint, name));
  article.append(el('p', `Used by ${users.length} alert${users.length === 1 ? '' : 's'} shown here.`, { class: 'hint' }));
  const result = el('p', '', { class: 'result', role: 'status' });
  const bar = el('p', null, { class: 'actions' });
  if (endpoint.state === 'disabled') {
    const enable = button('Re-enable', { 'aria-describedby': headingId });
    enable.addEventListener('click', () =>
      act(
        app,
        enable,
        result,
        () => api(`webhooks/${enc(endpoint.id)}/enable`, { method: 'POST' }),
        `Re-enabled ${name}.`,
        () => $(headingId),
      ),
    );
    bar.append(enable);
  }
  const remove = button('Delete', { 'aria-describedby': headingId, class: 'danger' });
  remove.addEventListener('click', () =>
    act(
      app,
      remove,
      result,
      () => api(`webhooks/${enc(endpoint.id)}`, { method: 'DELETE', as: 'none' }),
      `Deleted ${name}.`,
      () => $('endpoints-heading'),
    ),
  );
  bar.append(remove);
  article.append(bar, result);
  list.append(article);
}

export function render(app, summary) {
  const list = $('endpoint-list');
  list.replaceChildren();
  const { items, total } = summary.endpoints;
  if (items.length === 0) list.append(el('p', 'No endpoints: an alert makes one.'));
  for (const endpoint of items)
    showEndpoint(
      app,
      endpoint,
      summary.alerts.items.filter((a) => a.endpoint_id === endpoint.id),
      list,
    );
  const part = partOf(items.length, total, 'endpoints');
  if (part) list.append(part);
}

export function clear() {
  $('endpoint-list').replaceChildren();
}
