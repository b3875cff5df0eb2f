/**
 * Wire item → our normalised UpstreamItem. Tolerates every missing member.
 */
import type { Availability, Price, UpstreamItem } from '../../core/product.js';
import { currencyDigits } from '../marketplaces.js';
import type { ReadItem } from './read.js';
import type { WireOfferListing } from './wire.js';

/**
 * A listing's price when it has one we can use: the SDK marks `amount` and `currency` optional, and
 * a price without either says nothing we could store. The currency must look like an ISO 4217 code,
 * since the minor units are looked up by it.
 */
export function usableMoney(listing: WireOfferListing): { amount: number; currency: string } | undefined {
  const money = listing.price?.money;
  if (typeof money?.amount !== 'number' || !Number.isFinite(money.amount)) return undefined;
  if (typeof money.currency !== 'string' || !/^[A-Z]{3}$/.test(money.currency)) return undefined;
  return { amount: money.amount, currency: money.currency };
}

/**
 * The listing whose price we keep: among the listings with a usable price, the Buy Box winner when
 * it is one of them, else the cheapest. OffersV2 has no summary of the lowest price, so "lowest" is
 * over the listings returned.
 */
export function pickListing(listings: readonly WireOfferListing[]): WireOfferListing | undefined {
  const priced = listings.filter((l) => usableMoney(l) !== undefined);
  const winner = priced.find((l) => l.isBuyBoxWinner === true);
  if (winner) return winner;
  let best: WireOfferListing | undefined;
  for (const l of priced) if (!best || usableMoney(l)!.amount < usableMoney(best)!.amount) best = l;
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

export function normalizeItem(item: ReadItem): UpstreamItem {
  const info = item.itemInfo;
  const listings = item.offersV2?.listings ?? [];
  const chosen = pickListing(listings);
  const money = chosen ? usableMoney(chosen) : undefined;
  const price: Price | null = money ? { amount: toMinorUnits(money.amount, money.currency), currency: money.currency } : null;
  // No listing at all is the explicit "no offer" state: price null and, since nobody sells it,
  // out of stock (Keepa's -1 means the same thing). Listings that show no usable price still say
  // whether the item is on sale: the Buy Box listing's availability, else the first one's.
  const shown = chosen ?? listings.find((l) => l.isBuyBoxWinner === true) ?? listings[0];
  const availability: Availability = shown ? mapAvailability(shown.availability?.type) : 'out_of_stock';
  const eans = new Set<string>();
  // A UPC is an EAN-13 with a leading zero; keep one spelling. Amazon lists such codes in both
  // forms, and the 12-digit one can stand in the EAN list itself.
  const asEan = (code: string): string => (/^\d{12}$/.test(code) ? `0${code}` : code);
  for (const e of info?.externalIds?.eans?.displayValues ?? []) if (/^\d{13}$/.test(asEan(e))) eans.add(asEan(e));
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
    buyBox: money !== undefined && chosen?.isBuyBoxWinner === true,
    salesRank: rank !== undefined && Number.isInteger(rank) && rank > 0 ? rank : null,
    // Nodes without an id were left out (and counted) when the item was read.
    browseNodes: (item.browseNodeInfo?.browseNodes ?? []).flatMap((n) =>
      n.id ? [{ id: n.id, name: n.displayName ?? n.contextFreeName ?? null }] : [],
    ),
    offers: listings.length,
    raw: item,
  };
}
