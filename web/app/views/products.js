/* global document, URL, IntersectionObserver, setTimeout, clearTimeout */
// Watched products: adding them (one, or a pasted list, with each EAN import's progress), each
// product's state, chart, recent changes and CSV download, removing them, and the browse nodes.

import { api, enc } from '../lib/api.js';
import { $, el, button, setStatus, showFormError, clearFormError } from '../lib/dom.js';
import { formatPrice, formatDateTime, formatNumber, isoOf } from '../lib/format.js';
import { parseList } from '../lib/parse-list.js';

const CHART_DAYS = 30;
const RECENT_POINTS = 10;
const IMPORT_POLL_MS = 2000;
/** An import still resolving after this many polls is left to the next visit. */
const IMPORT_POLLS = 150;
const TYPE_NAMES = { asin: 'ASIN', ean: 'JAN/EAN', browse: 'browse node' };
const DONE_IMPORTS = new Set(['done', 'not_found', 'failed']);

/** Chart blob: URLs by product and country, kept across re-renders so a reload fetches none again. */
const charts = new Map();
let chartObserver = null;
const pendingCharts = new Map();
const importTimers = new Set();

export function clear() {
  chartObserver?.disconnect();
  chartObserver = null;
  pendingCharts.clear();
  for (const url of charts.values()) URL.revokeObjectURL(url);
  charts.clear();
  for (const timer of importTimers) clearTimeout(timer);
  importTimers.clear();
  $('product-list').replaceChildren();
  $('browse-list').replaceChildren();
  $('import-list').replaceChildren();
  $('imports').hidden = true;
}

// --- charts, fetched as they come near the view --------------------------------------------------

function observeChart(figure, load) {
  chartObserver ??= new IntersectionObserver(
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
  pendingCharts.set(figure, load);
  chartObserver.observe(figure);
}

function chartOf(record, article) {
  const label = `Price of ${record.title ?? record.asin} in ${record.country} over the last ${CHART_DAYS} days`;
  const figure = el('figure', null, { class: 'chart-frame' });
  article.append(figure);
  const key = `${record.asin}|${record.country}`;
  const show = (url) => {
    const img = el('img', null, { alt: label, class: 'chart', width: '600', height: '300' });
    img.src = url;
    figure.append(img, el('figcaption', label));
  };
  if (charts.has(key)) return show(charts.get(key));
  observeChart(figure, async () => {
    try {
      const { blob } = await api(`world/asin/${enc(record.asin)}/history.svg?country=${enc(record.country)}&days=${CHART_DAYS}`, {
        as: 'blob',
        accept: 'image/svg+xml',
      });
      if (!figure.isConnected) return;
      const url = URL.createObjectURL(blob);
      charts.set(key, url);
      show(url);
    } catch (err) {
      figure.append(el('p', `Chart unavailable: ${err.message}`, { class: 'error' }));
    }
  });
}

// --- one product ---------------------------------------------------------------------------------

/** The record's points among the summary's recent changes (newest first). */
function recentChanges(record, changes, article) {
  const points = changes.filter((p) => p.asin === record.asin && p.country === record.country).slice(0, RECENT_POINTS);
  article.append(el('h4', 'Recent changes'));
  if (points.length === 0) {
    article.append(el('p', 'No recent changes.'));
    return;
  }
  const head = el('tr');
  for (const h of ['When', 'Price', 'Availability', 'Buy Box', 'Rank']) head.append(el('th', h, { scope: 'col' }));
  const body = el('tbody');
  for (const p of points) {
    body.append(
      el(
        'tr',
        null,
        {},
        el('td', null, {}, el('time', formatDateTime(p.at), { datetime: isoOf(p.at) })),
        el('td', formatPrice(p.price, p.currency)),
        el('td', p.availability ?? '—'),
        el('td', p.buybox ? 'yes' : 'no'),
        el('td', formatNumber(p.rank)),
      ),
    );
  }
  article.append(
    el('table', null, {}, el('caption', `The ${points.length} newest points, newest first`), el('thead', null, {}, head), body),
  );
}

/** The whole history as a CSV file, fetched with the token and handed to the browser as a download. */
async function downloadCsv(record, result) {
  result.textContent = 'Preparing the CSV file…';
  result.classList.remove('error');
  try {
    const { blob, filename } = await api(`world/asin/${enc(record.asin)}/history.csv?country=${enc(record.country)}`, {
      as: 'blob',
      accept: 'text/csv',
    });
    const url = URL.createObjectURL(blob);
    const link = el('a', null, { href: url, download: filename ?? `${record.asin}-${record.country}-history.csv`, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    result.textContent = `Downloaded ${filename ?? 'the history'}.`;
  } catch (err) {
    result.textContent = `No CSV file: ${err.message}`;
    result.classList.add('error');
  }
}

function controls(app, watch, record, article, headingId) {
  const result = el('p', '', { class: 'result', role: 'status' });
  const bar = el('p', null, { class: 'actions' });
  if (record) {
    const csv = button('Download CSV', { 'aria-describedby': headingId });
    csv.addEventListener('click', () => downloadCsv(record, result));
    bar.append(csv);
  }
  const remove = button('Remove', { 'aria-describedby': headingId, class: 'danger' });
  remove.addEventListener('click', () => removeWatch(app, `watch/asin/${enc(watch.asin)}`, watch.asin, remove, result, 'asins-heading'));
  bar.append(remove);
  article.append(bar, result);
}

async function removeWatch(app, path, name, control, result, focusId) {
  control.disabled = true;
  try {
    await api(path, { method: 'DELETE' });
    await app.reload({ status: `Stopped watching ${name}.`, focus: () => $(focusId) });
  } catch (err) {
    control.disabled = false;
    result.textContent = `Not removed: ${err.message}`;
    result.classList.add('error');
  }
}

function showProduct(app, { watch, records }, changes, list) {
  const priority = watch.priority === 1 ? 'high priority' : 'normal priority';
  if (records.length === 0) {
    const headingId = `product-${watch.asin}`;
    const article = el('article', null, { 'data-asin': watch.asin });
    article.append(el('h3', watch.asin, { id: headingId }), el('p', `Not known yet · ${priority}`));
    controls(app, watch, null, article, headingId);
    list.append(article);
    return;
  }
  for (const record of records) {
    const headingId = `product-${record.asin}-${record.country}`;
    const article = el('article', null, { 'data-asin': record.asin, 'data-country': record.country });
    article.append(el('h3', `${record.title ?? record.asin} (${record.asin}, ${record.country})`, { id: headingId }));
    article.append(
      el(
        'p',
        `${formatPrice(record.price?.amount, record.price?.currency)} · ${record.availability ?? 'unknown'} · ${record.refresh?.status} · ${priority}`,
      ),
    );
    controls(app, watch, record, article, headingId);
    list.append(article);
    chartOf(record, article);
    recentChanges(record, changes, article);
  }
}

/** "Showing the 100 newest of 240": the rest are on the lists' next pages, which this page does not walk. */
export function partOf(shown, total, what) {
  return shown < total ? el('p', `Showing the ${shown} newest of ${total} ${what}.`, { class: 'hint' }) : null;
}

function showBrowseNodes(app, summary) {
  const list = $('browse-list');
  const { items, total } = summary.browse_nodes;
  if (items.length === 0) list.append(el('p', 'No watched browse nodes.'));
  const ul = el('ul', null, { class: 'plain' });
  for (const node of items) {
    const headingId = `browse-${node.browse}`;
    const crawled = node.last_crawl_at
      ? `last crawled ${formatDateTime(node.last_crawl_at)}, ${formatNumber(node.last_crawl_count)} products`
      : 'not crawled yet';
    const result = el('span', '', { class: 'result', role: 'status' });
    const remove = button('Remove', { 'aria-describedby': headingId, class: 'danger' });
    remove.addEventListener('click', () =>
      removeWatch(app, `watch/browse/${enc(node.browse)}`, `browse node ${node.browse}`, remove, result, 'browse-heading'),
    );
    ul.append(
      el(
        'li',
        null,
        { 'data-browse': node.browse },
        el('span', `Browse node ${node.browse}`, { id: headingId }),
        el('span', ` · ${crawled} `),
        remove,
        result,
      ),
    );
  }
  if (items.length) list.append(ul);
  const part = partOf(items.length, total, 'browse nodes');
  if (part) list.append(part);
}

export function render(app, summary) {
  const list = $('product-list');
  list.replaceChildren();
  $('browse-list').replaceChildren();
  pendingCharts.clear();
  chartObserver?.disconnect();
  const { items, total } = summary.products;
  if (items.length === 0) list.append(el('p', 'No watched products.'));
  for (const item of items) showProduct(app, item, summary.recent_changes ?? [], list);
  const part = partOf(items.length, total, 'watched products');
  if (part) list.append(part);
  showBrowseNodes(app, summary);
}

// --- adding --------------------------------------------------------------------------------------

function importText(entry, record) {
  const found = record.asins.length
    ? `, ${record.asins.length} ASIN${record.asins.length === 1 ? '' : 's'} found (${record.asins.join(', ')})`
    : '';
  const countries = record.countries.map((c) => `${c.country} ${c.status.replaceAll('_', ' ')}`).join(', ');
  return `JAN/EAN ${entry.value}: import ${record.status.replaceAll('_', ' ')}${found}${countries ? ` · ${countries}` : ''}`;
}

/** Follows an EAN import until it ends; its ASINs join the watchlist as it resolves. */
function followImport(app, entry, record, item, polls = 0) {
  item.textContent = importText(entry, record);
  item.dataset.state = record.status;
  if (DONE_IMPORTS.has(record.status)) {
    void app.reload({ quiet: true });
    return;
  }
  if (polls >= IMPORT_POLLS) return;
  const timer = setTimeout(async () => {
    importTimers.delete(timer);
    try {
      const { data } = await api(`watch/ean/${enc(record.id)}`);
      if (item.isConnected) followImport(app, entry, data, item, polls + 1);
    } catch (err) {
      item.textContent = `JAN/EAN ${entry.value}: progress unknown (${err.message})`;
    }
  }, IMPORT_POLL_MS);
  importTimers.add(timer);
}

async function addOne(app, entry, item) {
  const name = `${TYPE_NAMES[entry.type]} ${entry.value}`;
  if (entry.type === 'asin') {
    const { created } = await api('watch/asin', { method: 'POST', body: { asin: entry.value, priority: entry.priority ?? 0 } });
    item.textContent = `${name}: ${created ? 'added' : 'already watched (priority updated)'}`;
  } else if (entry.type === 'browse') {
    const { created } = await api('watch/browse', { method: 'POST', body: { browse: entry.value } });
    item.textContent = `${name}: ${created ? 'added' : 'already watched'}`;
  } else {
    const { data } = await api('watch/ean', { method: 'POST', body: { ean: entry.value } });
    followImport(app, entry, data, item);
    return;
  }
  item.dataset.state = 'added';
}

async function addAll(app, form) {
  clearFormError(form);
  const { entries, errors, duplicates } = parseList($('add-list').value, Number($('add-priority').value));
  if (entries.length === 0) {
    const message = errors.length
      ? `Nothing to add: ${errors.map((e) => `line ${e.line}: ${e.message}`).join('; ')}.`
      : 'Paste or type at least one ASIN, JAN/EAN code or browse node.';
    showFormError(form, { message, errors: { list: [message] } });
    return;
  }
  const submit = form.querySelector('button[type="submit"]');
  submit.disabled = true;
  const panel = $('imports');
  const list = $('import-list');
  const progress = $('imports-progress');
  panel.hidden = false;
  list.replaceChildren();
  progress.max = entries.length;
  progress.value = 0;
  for (const e of errors)
    list.append(el('li', `Line ${e.line} (${e.text}): not added, ${e.message}`, { class: 'error', 'data-state': 'invalid' }));
  setStatus(`Adding ${entries.length} product${entries.length === 1 ? '' : 's'}…`);
  let added = 0;
  for (const entry of entries) {
    const item = el('li', `${TYPE_NAMES[entry.type]} ${entry.value}: adding…`, { 'data-state': 'adding' });
    list.append(item);
    try {
      await addOne(app, entry, item);
      added++;
    } catch (err) {
      item.textContent = `${TYPE_NAMES[entry.type]} ${entry.value}: not added, ${err.message}`;
      item.dataset.state = 'failed';
      item.classList.add('error');
    }
    progress.value += 1;
  }
  submit.disabled = false;
  const skipped = [errors.length ? `${errors.length} not readable` : '', duplicates ? `${duplicates} repeated` : '']
    .filter(Boolean)
    .join(', ');
  if (added) $('add-list').value = '';
  await app.reload({
    status: `Added ${added} of ${entries.length}${skipped ? ` (${skipped})` : ''}.`,
    focus: () => $('imports-heading'),
  });
}

export function init(app) {
  const form = $('add-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void addAll(app, form);
  });
}
