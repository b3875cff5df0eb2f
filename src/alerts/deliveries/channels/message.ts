/**
 * What a delivery says to a person (chat and e-mail), in words: which product, what changed, and a
 * link to it. Every channel renders this one message in its own format, so they all say the same.
 */
import { MARKETPLACES } from '../../../../config/marketplaces.js';
import type { Country } from '../../../core/identifiers.js';
import type { Availability } from '../../../core/product.js';
import { formatPrice } from '../../../catalog/price-chart.js';
import { formatDateTime } from '../../../core/dates.js';
import type { AlertKind } from '../../../models/alert.js';
import type { DeliveryContent, PayloadPoint } from '../payload.js';

/** What a delivery knows of its product besides the change: its title and page, when fetched. */
export interface ProductLabel {
  readonly title: string | null;
  readonly url: string | null;
}

export interface AlertMessage {
  /** A sample from the test button, not an observed change. */
  readonly test: boolean;
  /**
   * The product's title, or its ASIN when the service has none yet. It comes from the upstream, so
   * anyone who can name a product writes it: every format carries it as text, never as markup.
   */
  readonly product: string;
  readonly asin: string;
  readonly country: Country;
  /**
   * The kinds of the alerts the change fired, and each alert in words, alike ones once: "Price drop",
   * "Price drop, Change", "Price below ¥5,000, Price below ¥4,000".
   */
  readonly kinds: readonly AlertKind[];
  readonly what: string;
  /** The product before and after, in words: "¥1,980", "out of stock". */
  readonly before: string | null;
  readonly after: string;
  /** "¥1,980 → ¥1,780 (−10.1%)", or the state after when there is nothing to compare. */
  readonly change: string;
  /** When the change was seen, in APP_TIMEZONE ("2026-11-24 10:00:00 Asia/Tokyo"). */
  readonly at: string;
  /** The product's page. */
  readonly link: string;
  /** One line saying it all: a chat notification's preview, an e-mail's subject. */
  readonly summary: string;
}

const KIND_WORDS: Readonly<Record<AlertKind, string>> = {
  price_below: 'Price below threshold',
  price_drop: 'Price drop',
  price_rise: 'Price rise',
  back_in_stock: 'Back in stock',
  out_of_stock: 'Out of stock',
  buybox_change: 'Buy Box change',
  rank_below: 'Sales rank into the band',
  rank_above: 'Sales rank out of the band',
  any_change: 'Change',
};

const AVAILABILITY_WORDS: Readonly<Record<Availability, string>> = {
  in_stock: 'in stock',
  out_of_stock: 'out of stock',
  preorder: 'pre-order',
  backorder: 'back-order',
  unknown: 'availability unknown',
};

/** One fired alert in words, with what tells it from others of its kind when the delivery carries it. */
function alertWords(a: DeliveryContent['alerts'][number], currency: string, locale: string): string {
  if (a.kind === 'price_below' && a.price !== undefined) return `Price below ${formatPrice(a.price, currency, locale)}`;
  if (a.kind === 'rank_below' && a.rank !== undefined) return `Sales rank at ${a.rank} or better`;
  if (a.kind === 'rank_above' && a.rank !== undefined) return `Sales rank worse than ${a.rank}`;
  return KIND_WORDS[a.kind];
}

/** The upstream's page when it is a web address we would link to, else the marketplace's page of the ASIN. */
function productLink(country: Country, asin: string, url: string | null): string {
  if (url && /^https?:\/\//i.test(url)) {
    try {
      return new URL(url).href;
    } catch {
      // fall through to the marketplace's page
    }
  }
  return `https://${MARKETPLACES[country].host}/dp/${encodeURIComponent(asin)}`;
}

function priceText(p: PayloadPoint, country: Country, locale: string): string | null {
  if (p.price === null) return null;
  return formatPrice(p.price, p.currency ?? MARKETPLACES[country].currency, locale);
}

/** "¥1,780", "¥1,780, out of stock", "out of stock". */
function stateText(p: PayloadPoint, country: Country, locale: string): string {
  const price = priceText(p, country, locale);
  if (price === null) return AVAILABILITY_WORDS[p.availability];
  return p.availability === 'in_stock' ? price : `${price}, ${AVAILABILITY_WORDS[p.availability]}`;
}

/** The move in percent, signed with a real minus: "−10.1%"; null when the prices cannot be compared. */
function moveText(before: PayloadPoint, after: PayloadPoint, locale: string): string | null {
  if (before.price === null || after.price === null || before.price === 0 || before.currency !== after.currency) return null;
  const ratio = (after.price - before.price) / before.price;
  if (ratio === 0) return null;
  const percent = new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: 1, signDisplay: 'always' });
  return percent.format(ratio).replace('-', '−');
}

/**
 * The one line of a message: "Price drop: <title, at most 80 characters> (JP) ¥1,980 → ¥1,780".
 * `title` dresses the product's title for a format that would read its markup (the rest is ours).
 */
export function summaryOf(m: Pick<AlertMessage, 'test' | 'what' | 'product' | 'country' | 'change'>, title = (t: string) => t): string {
  const short = m.product.length > 80 ? `${m.product.slice(0, 79)}…` : m.product;
  return `${m.test ? '[Test] ' : ''}${m.what}: ${title(short)} (${m.country}) ${m.change}`;
}

export function alertMessage(content: DeliveryContent, product: ProductLabel, timeZone: string, test = false): AlertMessage {
  const { country, asin } = content;
  const locale = MARKETPLACES[country].language.replace('_', '-');
  const before = content.before ? stateText(content.before, country, locale) : null;
  const after = stateText(content.after, country, locale);
  const move = content.before ? moveText(content.before, content.after, locale) : null;
  const change = before === null || before === after ? after : `${before} → ${after}${move ? ` (${move})` : ''}`;
  const kinds = [...new Set(content.alerts.map((a) => a.kind))];
  const currency = content.after.currency ?? MARKETPLACES[country].currency;
  const what = [...new Set(content.alerts.map((a) => alertWords(a, currency, locale)))].join(', ');
  // A retailer's title may hold line breaks, which would end an e-mail header or a chat heading.
  const title = product.title?.replace(/\s+/g, ' ').trim() || asin;
  const parts = { test, what, product: title, country, change };
  return {
    test,
    product: title,
    asin,
    country,
    kinds,
    what,
    before,
    after,
    change,
    at: `${formatDateTime(new Date(content.after.at), timeZone)} ${timeZone}`,
    link: productLink(country, asin, product.url),
    summary: summaryOf(parts),
  };
}
