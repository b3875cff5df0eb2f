/**
 * Wire item → our normalised UpstreamItem. Tolerates every missing member.
 */
import type { Availability, Price, UpstreamItem } from '../../catalog/product.js';
import { currencyDigits } from '../marketplaces.js';
import type { WireItem, WireOfferListing } from './wire.js';

/**
 * The listing whose price we keep: the Buy Box winner when there is one, else the cheapest. OffersV2
 * has no summary of the lowest price, so "lowest" is over the listings returned.
 */
export function pickListing(listings: readonly WireOfferListing[]): WireOfferListing | undefined {
  const priced = listings.filter((l) => l.price?.money !== undefined);
  const winner = priced.find((l) => l.isBuyBoxWinner === true);
  if (winner) return winner;
  let best: WireOfferListing | undefined;
  for (const l of priced) if (!best || l.price!.money!.amount < best.price!.money!.amount) best = l;
  return best;
}

/** Major units as sent (19.99 USD, 1980 JPY) → integer minor units (1999, 1980). */
export function toMinorUnits(amount: number, currency: string): number {
  return Math.round(amount * 10 ** currencyDigits(currency));
}

/** OffersV2 availability types onto our five states. */
export function mapAvailability(type: string | undefined): Availability {
  switch (type) {
    case 'IN_STOCK':
    case 'IN_STOCK_SCARCE':
      return 'in_stock';
    case 'OUT_OF_STOCK':
      return 'out_of_stock';
    case 'AVAILABLE_DATE':
    case 'PREORDER':
      return 'preorder';
    case 'LEADTIME':
    case 'BACKORDER':
      return 'backorder';
    default:
      return 'unknown';
  }
}

export function normalizeItem(item: WireItem): UpstreamItem {
  const info = item.itemInfo;
  const listings = item.offersV2?.listings ?? [];
  const chosen = pickListing(listings);
  const money = chosen?.price?.money;
  const price: Price | null = money ? { amount: toMinorUnits(money.amount, money.currency), currency: money.currency } : null;
  // No listing at all is the explicit "no offer" state: price null and, since nobody sells it,
  // out of stock (Keepa's -1 means the same thing).
  const availability: Availability = chosen
    ? mapAvailability(chosen.availability?.type)
    : listings.length === 0
      ? 'out_of_stock'
      : 'unknown';
  const eans = new Set<string>();
  for (const e of info?.externalIds?.eans?.displayValues ?? []) if (/^\d{13}$/.test(e)) eans.add(e);
  // A UPC is an EAN-13 with a leading zero; keep one spelling.
  for (const u of info?.externalIds?.upcs?.displayValues ?? []) if (/^\d{12}$/.test(u)) eans.add(`0${u}`);
  const rank = item.browseNodeInfo?.websiteSalesRank?.salesRank;
  return {
    asin: item.asin.toUpperCase(),
    title: info?.title?.displayValue ?? null,
    brand: info?.byLineInfo?.brand?.displayValue ?? info?.byLineInfo?.manufacturer?.displayValue ?? null,
    image: item.images?.primary?.large?.url ?? item.images?.primary?.medium?.url ?? item.images?.primary?.small?.url ?? null,
    url: item.detailPageURL ?? null,
    eans: [...eans],
    price,
    availability,
    salesRank: rank !== undefined && Number.isInteger(rank) && rank > 0 ? rank : null,
    browseNodes: (item.browseNodeInfo?.browseNodes ?? []).map((n) => ({ id: n.id, name: n.displayName ?? n.contextFreeName ?? null })),
    raw: item,
  };
}
