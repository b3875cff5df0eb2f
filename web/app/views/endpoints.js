// Endpoints: where alerts deliver, each with its state (active, failing since…, disabled and why;
// an e-mail address's confirmation), re-enabled or deleted here.

import { api, enc } from '../lib/api.js';
import { $, el, button } from '../lib/dom.js';
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
