// The account: who is signed in, its time zone, its deals feed address, and a new API token.

/* global document */
import { api, setToken } from '../lib/api.js';
import { $, focusOn, setStatus, showFormError, submitting } from '../lib/dom.js';
import { formatDateTime } from '../lib/format.js';

/** Whether GET /api/me was read since the sign-in: the time zone and the feed address are not in the summary. */
let loaded = false;

function showMe(data) {
  loaded = true;
  $('time-zone').value = data.time_zone;
  $('feed-url').value = data.deals_feed_url;
}

export async function render(_app, summary) {
  $('account-facts').textContent = `${summary.account.name}, since ${formatDateTime(summary.account.created_at)}.`;
  if (loaded) return;
  try {
    showMe((await api('me')).data);
  } catch (err) {
    setStatus(`Could not read the account's settings: ${err.message}`, true);
  }
}

export function clear() {
  loaded = false;
  $('time-zone').value = '';
  $('feed-url').value = '';
  $('account-facts').textContent = '';
  $('new-token').value = '';
  $('new-token-box').hidden = true;
  $('token-form').reset();
}

function rotate(form) {
  if (!$('token-confirm').checked) {
    showFormError(form, { message: 'Tick the box first: the old token stops working.', errors: { confirm: ['Required.'] } });
    return;
  }
  void submitting(form, async () => {
    const { data } = await api('me/token', { method: 'POST' });
    setToken(data.api_token);
    $('new-token').value = data.api_token;
    $('new-token-box').hidden = false;
    $('token-confirm').checked = false;
    setStatus('Rotated the token: copy the new one into your scripts; the old one no longer works.');
    focusOn($('new-token'));
    $('new-token').select();
  });
}

/** Sends a form's change and shows the account as the API answers it. */
function save(form, call, status, focus) {
  void submitting(form, async () => {
    showMe((await call()).data);
    setStatus(status);
    focusOn(focus);
  });
}

export function init() {
  const zones = $('time-zones');
  for (const zone of Intl.supportedValuesOf?.('timeZone') ?? [])
    zones.append(Object.assign(document.createElement('option'), { value: zone }));
  const zoneForm = $('zone-form');
  zoneForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const zone = $('time-zone').value.trim();
    save(zoneForm, () => api('me', { method: 'PATCH', body: { time_zone: zone } }), `Saved the time zone: ${zone}.`, $('time-zone'));
  });
  const feedForm = $('feed-form');
  feedForm.addEventListener('submit', (event) => {
    event.preventDefault();
    save(feedForm, () => api('me/feed-token', { method: 'POST' }), 'Made a new feed address: the old one no longer works.', $('feed-url'));
  });
  const form = $('token-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    rotate(form);
  });
}
