/* global document, CSS */
// The account page: signs in with a pasted token (kept in this tab's sessionStorage only), loads
// everything it shows with one request (GET /api/me/summary), and after each action loads it again
// and puts focus back where the person was. Each view (views/) renders its part of the summary.

import { api, token, setToken, clearToken, whenRefused } from './lib/api.js';
import { $, setStatus, focusOn } from './lib/dom.js';
import * as products from './views/products.js';
import * as alerts from './views/alerts.js';
import * as endpoints from './views/endpoints.js';
import * as account from './views/account.js';

const VIEWS = [products, alerts, endpoints, account];
const SECTIONS = ['products', 'alerts', 'endpoints', 'account', 'nav', 'sign-out', 'who'];

function showSignedIn(signedIn) {
  $('sign-in').hidden = signedIn;
  for (const id of SECTIONS) $(id).hidden = !signedIn;
}

function clearPage() {
  for (const view of VIEWS) view.clear();
  $('who').textContent = '';
}

function signOut(message = 'Signed out.') {
  clearToken();
  clearPage();
  showSignedIn(false);
  setStatus(message, message !== 'Signed out.');
  $('token').value = '';
  $('token').focus();
}

const ITEM_KEYS = ['alert', 'asin', 'country', 'endpoint', 'browse'];

/** Where focus is, as a selector that finds the same control once the views are made anew. */
function focusKey() {
  const node = document.activeElement;
  if (!node || node === document.body) return null;
  if (node.id) return `#${CSS.escape(node.id)}`;
  const item = node.closest('[data-alert], [data-asin], [data-endpoint], [data-browse]');
  if (!item || node.tagName !== 'BUTTON') return null;
  const attrs = ITEM_KEYS.filter((k) => item.dataset[k]).map((k) => `[data-${k}="${CSS.escape(item.dataset[k])}"]`);
  return { item: attrs.join(''), text: node.textContent };
}

function findFocus(key) {
  if (typeof key === 'string') return document.querySelector(key);
  const item = document.querySelector(key.item);
  return item ? [...item.querySelectorAll('button')].find((b) => b.textContent === key.text) : null;
}

const app = {
  summary: null,
  /**
   * Loads the summary and renders every view. `status`: what to announce once it is shown;
   * `focus`: what takes focus then (a function, since the views' elements are made anew);
   * `quiet`: announce nothing (a background refresh).
   */
  async reload({ status, focus, quiet = false } = {}) {
    let summary;
    try {
      ({ data: summary } = await api('me/summary'));
    } catch (err) {
      if (err.status !== 401) setStatus(`Could not load the account: ${err.message}`, true);
      return;
    }
    app.summary = summary;
    const kept = focus ? null : focusKey();
    $('who').textContent = `Signed in as ${summary.account.name}`;
    showSignedIn(true);
    for (const view of VIEWS) view.render(app, summary);
    if (!quiet) setStatus(status ?? 'Loaded.');
    if (focus) focusOn(focus());
    // A refresh nobody asked for (an import ended) leaves focus where it was.
    else if (kept && document.activeElement === document.body) findFocus(kept)?.focus();
  },
};

whenRefused(signOut);
for (const view of VIEWS) view.init?.(app);

$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const pasted = $('token').value.trim();
  if (!pasted) {
    setStatus('Paste your API token first.', true);
    $('token').focus();
    return;
  }
  setToken(pasted);
  $('token').value = '';
  clearPage();
  setStatus('Loading…');
  void app.reload({ focus: () => $('products-heading') });
});

$('sign-out').addEventListener('click', () => signOut());

if (token()) {
  clearPage();
  setStatus('Loading…');
  void app.reload();
} else showSignedIn(false);
