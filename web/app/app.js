/* global document, sessionStorage, fetch, URL, IntersectionObserver */
// The account page: the token lives in sessionStorage only; every text from the API goes in through
// textContent. The page is one request (GET /api/me/summary); each chart is fetched with the token
// when it comes into view and shown through a blob: URL.

const TOKEN_KEY = 'shelfwatch.token';
const CHART_DAYS = 30;
const RECENT_POINTS = 10;

const $ = (id) => document.getElementById(id);
const statusLine = $('status');
/** blob: URLs of the charts shown, revoked when the page is cleared. */
let chartUrls = [];

function setStatus(text, isError = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle('error', isError);
}

/** An element with text (never markup) and attributes. */
function el(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** A call to the API (relative: the page is at …/app/, the API at …/api/). */
async function api(path, { method = 'GET', as = 'json' } = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const res = await fetch(`../api/${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, Accept: as === 'json' ? 'application/json' : 'image/svg+xml' },
    credentials: 'omit',
    cache: 'no-store',
  });
  if (!res.ok) {
    let message = `HTTP ${res.status}`;
    try {
      const body = await res.json();
      if (body && typeof body.message === 'string') message = body.message;
    } catch {
      // not JSON: keep the status
    }
    if (res.status === 401) signOut('The token was refused: signed out.');
    throw new ApiError(res.status, message);
  }
  return as === 'blob' ? res.blob() : res.json();
}

const enc = encodeURIComponent;

function formatPrice(amount, currency) {
  if (amount === null || amount === undefined) return 'no offer';
  if (!currency) return String(amount);
  try {
    const format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
    return format.format(amount / 10 ** format.resolvedOptions().maximumFractionDigits);
  } catch {
    return `${amount} ${currency}`;
  }
}

function clearPage() {
  chartObserver?.disconnect();
  pendingCharts.clear();
  for (const url of chartUrls) URL.revokeObjectURL(url);
  chartUrls = [];
  $('product-list').replaceChildren();
  $('alert-list').replaceChildren();
  $('who').textContent = '';
}

function showSignedIn(signedIn) {
  $('sign-in').hidden = signedIn;
  $('products').hidden = !signedIn;
  $('alerts').hidden = !signedIn;
  $('sign-out').hidden = !signedIn;
  $('who').hidden = !signedIn;
}

function signOut(message = 'Signed out.') {
  sessionStorage.removeItem(TOKEN_KEY);
  clearPage();
  showSignedIn(false);
  setStatus(message, message !== 'Signed out.');
  $('token').value = '';
  $('token').focus();
}

// --- products -------------------------------------------------------------------------------

/** Fetches each chart only when its figure comes near the view: a page of 100 products asks for a few. */
let chartObserver = null;
/** Figures waiting to come into view, with what fetches their chart. */
const pendingCharts = new Map();

function observeChart(figure, load) {
  if (!chartObserver) {
    chartObserver = new IntersectionObserver(
      (entries) => {
        for (const entry of entries) {
          if (!entry.isIntersecting) continue;
          chartObserver.unobserve(entry.target);
          const start = pendingCharts.get(entry.target);
          pendingCharts.delete(entry.target);
          if (start) void start();
        }
      },
      { rootMargin: '200px 0px' },
    );
  }
  pendingCharts.set(figure, load);
  chartObserver.observe(figure);
}

function chartOf(record, article) {
  const label = `Price of ${record.title ?? record.asin} in ${record.country} over the last ${CHART_DAYS} days`;
  const figure = el('figure', null, { class: 'chart-frame' });
  article.append(figure);
  observeChart(figure, async () => {
    try {
      const blob = await api(`world/asin/${enc(record.asin)}/history.svg?country=${enc(record.country)}&days=${CHART_DAYS}`, {
        as: 'blob',
      });
      if (!figure.isConnected) return;
      const url = URL.createObjectURL(blob);
      chartUrls.push(url);
      const img = el('img', null, { alt: label, class: 'chart', width: '600', height: '300' });
      img.src = url;
      figure.append(img, el('figcaption', label));
    } catch (err) {
      figure.append(el('p', `Chart unavailable: ${err.message}`, { class: 'error' }));
    }
  });
}

/** The record's points among the summary's recent changes (newest first). */
function recentChanges(record, changes, article) {
  const points = changes.filter((p) => p.asin === record.asin && p.country === record.country).slice(0, RECENT_POINTS);
  article.append(el('h4', 'Recent changes'));
  if (points.length === 0) {
    article.append(el('p', 'No recent changes.'));
    return;
  }
  const table = el('table');
  table.append(el('caption', `The ${points.length} newest points, newest first`));
  const head = el('tr');
  for (const h of ['When', 'Price', 'Availability', 'Buy Box', 'Rank']) head.append(el('th', h, { scope: 'col' }));
  const thead = el('thead');
  thead.append(head);
  table.append(thead);
  const body = el('tbody');
  for (const p of points) {
    const row = el('tr');
    row.append(
      el('td', p.at),
      el('td', formatPrice(p.price, p.currency)),
      el('td', p.availability ?? '—'),
      el('td', p.buybox ? 'yes' : 'no'),
      el('td', p.rank ?? '—'),
    );
    body.append(row);
  }
  table.append(body);
  article.append(table);
}

function showProduct({ watch, records }, changes, list) {
  if (records.length === 0) {
    const article = el('article', null, { 'data-asin': watch.asin });
    article.append(el('h3', watch.asin), el('p', 'Not known yet.'));
    list.append(article);
    return;
  }
  for (const record of records) {
    const article = el('article', null, { 'data-asin': record.asin, 'data-country': record.country });
    article.append(el('h3', `${record.title ?? record.asin} (${record.asin}, ${record.country})`));
    const facts = el(
      'p',
      `${formatPrice(record.price?.amount, record.price?.currency)} · ${record.availability ?? 'unknown'} · ${record.refresh?.status}`,
    );
    article.append(facts);
    list.append(article);
    chartOf(record, article);
    recentChanges(record, changes, article);
  }
}

/** "Showing 100 of 240": the rest are on the lists' next pages, which this page does not walk. */
function partOf(shown, total, what) {
  return shown < total ? el('p', `Showing the ${shown} newest of ${total} ${what}.`, { class: 'hint' }) : null;
}

function showProducts(summary) {
  const list = $('product-list');
  const { items, total } = summary.products;
  if (items.length === 0) list.append(el('p', 'No watched products.'));
  for (const item of items) showProduct(item, summary.recent_changes ?? [], list);
  const part = partOf(items.length, total, 'watched products');
  if (part) list.append(part);
}

// --- alerts ---------------------------------------------------------------------------------

function describeAlert(a) {
  if (a.kind === 'price_below') return `price below ${a.price} (minor units)`;
  const move = a.percent !== null ? `${a.percent} %` : `${a.amount} (minor units)`;
  if (a.kind === 'price_drop') return `price drops by ${move}`;
  if (a.kind === 'price_rise') return `price rises by ${move}`;
  if (a.kind === 'back_in_stock') return 'back in stock';
  if (a.kind === 'out_of_stock') return 'out of stock';
  if (a.kind === 'buybox_change') return 'Buy Box changes';
  if (a.kind === 'rank_below') return `sales rank ${a.rank} or better`;
  if (a.kind === 'rank_above') return `sales rank worse than ${a.rank}`;
  return 'any change';
}

const CHANNEL_NAMES = {
  webhook: 'Webhook',
  slack: 'Slack',
  discord: 'Discord',
  teams: 'Teams',
  ntfy: 'ntfy',
  telegram: 'Telegram',
  email: 'E-mail',
};

/** Where the alert delivers: a chat target comes redacted from the API. */
function channelLabel(alert) {
  const channel = alert.channel ?? 'webhook';
  return `${CHANNEL_NAMES[channel] ?? channel}: ${channel === 'email' ? alert.email : alert.webhook_url}`;
}

/** What a test delivery came to: its `outcome` when the answer names one, else the status it got. */
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

async function testAlert(alert, button, result) {
  button.disabled = true;
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
    button.disabled = false;
  }
}

function showAlert(alert, list) {
  const article = el('article', null, { 'data-alert': alert.id });
  const headingId = `alert-${alert.id}`;
  article.append(el('h3', `${alert.asin} (${alert.country}): ${describeAlert(alert)}`, { id: headingId }));
  article.append(el('p', `${channelLabel(alert)}${alert.active ? '' : ` (inactive: ${alert.disabled_reason ?? 'endpoint disabled'})`}`));
  const button = el('button', 'Test', { type: 'button', 'aria-describedby': headingId });
  const result = el('p', '', { class: 'result', role: 'status', 'aria-live': 'polite' });
  button.addEventListener('click', () => testAlert(alert, button, result));
  article.append(button, result, el('h4', 'Latest delivery'));
  list.append(article);
  const d = alert.latest_delivery;
  if (!d) {
    article.append(el('p', 'No deliveries yet.'));
    return;
  }
  const answer = d.response_code ? `HTTP ${d.response_code}` : 'no answer';
  const error = d.last_error ? ` (${d.last_error})` : '';
  article.append(el('p', `${d.created_at}: ${d.status}, ${d.attempts} attempt(s), ${answer}${error}`));
}

function showAlerts(summary) {
  const list = $('alert-list');
  const { items, total } = summary.alerts;
  if (items.length === 0) list.append(el('p', 'No alerts.'));
  for (const a of items) showAlert(a, list);
  const part = partOf(items.length, total, 'alerts');
  if (part) list.append(part);
}

// --- sign in --------------------------------------------------------------------------------

async function load() {
  clearPage();
  setStatus('Loading…');
  let summary;
  try {
    ({ data: summary } = await api('me/summary'));
  } catch (err) {
    if (err.status !== 401) setStatus(`Could not load the account: ${err.message}`, true);
    return;
  }
  $('who').textContent = `Signed in as ${summary.account.name}`;
  showSignedIn(true);
  showProducts(summary);
  showAlerts(summary);
  setStatus('Loaded.');
}

$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const token = $('token').value.trim();
  if (!token) {
    setStatus('Paste your API token first.', true);
    $('token').focus();
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  $('token').value = '';
  void load();
});

$('sign-out').addEventListener('click', () => signOut());

if (sessionStorage.getItem(TOKEN_KEY)) void load();
else showSignedIn(false);
