// The account: who is signed in, and a new API token (the old one stops working at once).

import { api, setToken } from '../lib/api.js';
import { $, focusOn, setStatus, showFormError, clearFormError } from '../lib/dom.js';
import { formatDateTime } from '../lib/format.js';

export function render(_app, summary) {
  $('account-facts').textContent = `${summary.account.name}, since ${formatDateTime(summary.account.created_at)}.`;
}

export function clear() {
  $('account-facts').textContent = '';
  $('new-token').value = '';
  $('new-token-box').hidden = true;
  $('token-form').reset();
}

async function rotate(form) {
  clearFormError(form);
  if (!$('token-confirm').checked) {
    showFormError(form, { message: 'Tick the box first: the old token stops working.', errors: { confirm: ['Required.'] } });
    return;
  }
  const submit = form.querySelector('button[type="submit"]');
  submit.disabled = true;
  try {
    const { data } = await api('me/token', { method: 'POST' });
    setToken(data.api_token);
    $('new-token').value = data.api_token;
    $('new-token-box').hidden = false;
    $('token-confirm').checked = false;
    setStatus('Rotated the token: copy the new one into your scripts; the old one no longer works.');
    focusOn($('new-token'));
    $('new-token').select();
  } catch (err) {
    showFormError(form, err);
  } finally {
    submit.disabled = false;
  }
}

export function init() {
  const form = $('token-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void rotate(form);
  });
}
