/* global document, sessionStorage, fetch, URL */
// The account page: the token lives in sessionStorage only; every text from the API goes in through
// textContent; charts are fetched with the token and shown through blob: URLs.

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

async function chartOf(record, article) {
  const label = `Price of ${record.title ?? record.asin} in ${record.country} over the last ${CHART_DAYS} days`;
  const figure = el('figure');
  article.append(figure);
  try {
    const blob = await api(`world/asin/${enc(record.asin)}/history.svg?country=${enc(record.country)}&days=${CHART_DAYS}`, { as: 'blob' });
    const url = URL.createObjectURL(blob);
    chartUrls.push(url);
    const img = el('img', null, { alt: label, class: 'chart', width: '600', height: '300' });
    img.src = url;
    figure.append(img, el('figcaption', label));
  } catch (err) {
    figure.append(el('p', `Chart unavailable: ${err.message}`, { class: 'error' }));
  }
}

async function recentChanges(record, article) {
  const path = `world/asin/${enc(record.asin)}/history?country=${enc(record.country)}&limit=${RECENT_POINTS}`;
  const heading = el('h4', 'Recent changes');
  article.append(heading);
  try {
    // Oldest first, paged: the newest points are on the last page (and the one before, when it is short).
    const first = await api(path);
    const last = first.meta?.last_page ?? 1;
    let points = first.data ?? [];
    if (last > 1) {
      const [before, end] = await Promise.all([last === 2 ? first : api(`${path}&page=${last - 1}`), api(`${path}&page=${last}`)]);
      points = (before.data ?? []).concat(end.data ?? []);
    }
    points = points.slice(-RECENT_POINTS).reverse();
    if (points.length === 0) {
      article.append(el('p', 'No history yet.'));
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
  } catch (err) {
    article.append(el('p', `History unavailable: ${err.message}`, { class: 'error' }));
  }
}

async function showProduct(asin, list) {
  let records;
  try {
    records = (await api(`world/asin/${enc(asin)}`)).data ?? [];
  } catch (err) {
    const article = el('article', null, { 'data-asin': asin });
    article.append(el('h3', asin), el('p', err.status === 404 ? 'Not known yet.' : `Unavailable: ${err.message}`));
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
    await Promise.all([chartOf(record, article), recentChanges(record, article)]);
  }
}

async function loadProducts() {
  const list = $('product-list');
  list.setAttribute('aria-busy', 'true');
  try {
    const watches = (await api('watch?type=asin&limit=100')).data ?? [];
    if (watches.length === 0) list.append(el('p', 'No watched products.'));
    for (const w of watches) await showProduct(w.asin, list);
  } catch (err) {
    list.append(el('p', `Watchlist unavailable: ${err.message}`, { class: 'error' }));
  } finally {
    list.setAttribute('aria-busy', 'false');
  }
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

const CHANNEL_NAMES = { webhook: 'Webhook', slack: 'Slack', discord: 'Discord', teams: 'Teams', email: 'E-mail' };

/** Where the alert delivers: a chat webhook's URL comes redacted from the API. */
function channelLabel(alert) {
  const channel = alert.channel ?? 'webhook';
  return `${CHANNEL_NAMES[channel] ?? channel}: ${channel === 'email' ? alert.email : alert.webhook_url}`;
}

const TEST_OUTCOMES = { delivered: 'delivered', refused: 'refused', timed_out: 'timed out', unreachable: 'unreachable' };

async function testAlert(alert, button, result) {
  button.disabled = true;
  result.textContent = 'Sending a test delivery…';
  result.classList.remove('error');
  try {
    const { data } = await api(`alerts/${enc(alert.id)}/test`, { method: 'POST' });
    const answered = data.status === null ? 'no answer' : `${alert.channel === 'email' ? 'SMTP' : 'HTTP'} ${data.status}`;
    const outcome = TEST_OUTCOMES[data.outcome] ?? data.outcome;
    result.textContent = `Receiver answered ${answered} in ${data.duration_ms} ms: ${data.ok ? 'OK' : `${outcome} (${data.error})`}.`;
    result.classList.toggle('error', !data.ok);
  } catch (err) {
    result.textContent = `Test not sent: ${err.message}`;
    result.classList.add('error');
  } finally {
    button.disabled = false;
  }
}

async function showAlert(alert, list) {
  const article = el('article', null, { 'data-alert': alert.id });
  const headingId = `alert-${alert.id}`;
  article.append(el('h3', `${alert.asin} (${alert.country}): ${describeAlert(alert)}`, { id: headingId }));
  article.append(el('p', `${channelLabel(alert)}${alert.active ? '' : ` (inactive: ${alert.disabled_reason ?? 'endpoint disabled'})`}`));
  const button = el('button', 'Test', { type: 'button', 'aria-describedby': headingId });
  const result = el('p', '', { class: 'result', role: 'status', 'aria-live': 'polite' });
  button.addEventListener('click', () => testAlert(alert, button, result));
  article.append(button, result, el('h4', 'Latest deliveries'));
  list.append(article);
  try {
    const deliveries = (await api(`alerts/${enc(alert.id)}/deliveries?limit=5`)).data ?? [];
    if (deliveries.length === 0) {
      article.append(el('p', 'No deliveries yet.'));
      return;
    }
    const ul = el('ul');
    for (const d of deliveries) {
      const answer = d.response_code ? `HTTP ${d.response_code}` : 'no answer';
      const error = d.last_error ? ` (${d.last_error})` : '';
      ul.append(el('li', `${d.created_at}: ${d.status}, ${d.attempts} attempt(s), ${answer}${error}`));
    }
    article.append(ul);
  } catch (err) {
    article.append(el('p', `Deliveries unavailable: ${err.message}`, { class: 'error' }));
  }
}

async function loadAlerts() {
  const list = $('alert-list');
  list.setAttribute('aria-busy', 'true');
  try {
    const alerts = (await api('alerts?limit=100')).data ?? [];
    if (alerts.length === 0) list.append(el('p', 'No alerts.'));
    await Promise.all(alerts.map((a) => showAlert(a, list)));
  } catch (err) {
    list.append(el('p', `Alerts unavailable: ${err.message}`, { class: 'error' }));
  } finally {
    list.setAttribute('aria-busy', 'false');
  }
}

// --- sign in --------------------------------------------------------------------------------

async function load() {
  clearPage();
  setStatus('Loading…');
  try {
    const { data: me } = await api('me');
    $('who').textContent = `Signed in as ${me.name}`;
  } catch (err) {
    if (err.status !== 401) setStatus(`Could not sign in: ${err.message}`, true);
    return;
  }
  showSignedIn(true);
  await Promise.all([loadProducts(), loadAlerts()]);
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
