/**
 * The upstream port: what the workers call to read the retail catalogue of one country. Adapters
 * (the Creators API client, later Keepa) return normalised items only, never wire shapes, and throw
 * only the errors of ./errors.ts.
 */
import { z } from 'zod';
import { ASIN_RE, type Country } from '../core/identifiers.js';
import type { ItemOutcome, UpstreamItem } from '../core/product.js';

/** getItems takes at most this many ASINs. */
export const MAX_ITEMS_PER_CALL = 10;

/**
 * The ASINs of one getItems call: 1 to MAX_ITEMS_PER_CALL, upper-cased, none twice. Every edge that
 * takes a batch (the forced update's input, job payloads, the port's own check) parses with it.
 */
export const asinBatchSchema = z
  .array(z.string().regex(ASIN_RE, 'must hold only ASINs of 10 letters or digits.'))
  .min(1, 'is required.')
  .max(MAX_ITEMS_PER_CALL, `must not hold more than ${MAX_ITEMS_PER_CALL} ASINs (the upstream's limit).`)
  .refine((a) => new Set(a).size === a.length, 'must not hold an ASIN twice.');
/** Search and browse pages run from 1 to this. */
export const MAX_PAGE = 10;

/**
 * A part of an answer that was left out because it could not be read. Amazon's SDK marks almost
 * every member optional, so one item without its ASIN or one listing of the wrong shape costs that
 * member only: failing the whole answer would fail a batch of 10 ASINs as retryable, and each retry
 * would spend quota on the same answer again.
 */
export interface DroppedMember {
  /**
   * What was left out: an item, an offer listing, a browse node, an entry of `errors`, or one
   * value of a member that was kept (a title that is not a string).
   */
  readonly member: 'item' | 'listing' | 'browse_node' | 'error' | 'field';
  /** `missing_id`: no ASIN or browse node id to file it under; `malformed`: a value of the wrong type. */
  readonly reason: 'missing_id' | 'malformed';
}

export interface GetItemsResult {
  /** The items found, in the order of the request. */
  readonly items: readonly UpstreamItem[];
  /**
   * One entry per requested ASIN (upper-cased) that the answer accounts for. When the answer held
   * items without a readable ASIN, an ASIN that neither an item nor an error names may be one of
   * them: it has no entry, so nothing is recorded for it and it is refreshed at its next plan.
   */
  readonly outcomes: Readonly<Record<string, ItemOutcome>>;
  /** What the answer held that could not be read; absent when nothing was left out. */
  readonly dropped?: readonly DroppedMember[];
}

/** One page (1-10) of the search for a code. */
export interface FindByCodeResult {
  /** The code as searched (EAN-13; a 12-digit UPC is zero-padded). */
  readonly ean: string;
  readonly page: number;
  /** The items of this page whose EAN list contains the code: zero, one or several. */
  readonly items: readonly UpstreamItem[];
  /** Whether page + 1 may list more of them (never past page 10). */
  readonly hasMore: boolean;
  readonly dropped?: readonly DroppedMember[];
}

export interface BrowseNodePage {
  readonly nodeId: string;
  readonly page: number;
  readonly items: readonly UpstreamItem[];
  /** Every item listed on a page is found; kept for symmetry with getItems. */
  readonly outcomes: Readonly<Record<string, ItemOutcome>>;
  /** How many results the upstream says the node has, when it says. */
  readonly totalResults: number | null;
  /** Whether page + 1 exists (never past page 10). */
  readonly hasMore: boolean;
  readonly dropped?: readonly DroppedMember[];
}

export interface BrowseNodeInfo {
  readonly id: string;
  readonly name: string | null;
  readonly isRoot: boolean;
  readonly parentId: string | null;
  readonly children: readonly { readonly id: string; readonly name: string | null }[];
}

/** The nodes getBrowseNodes read, with what it left out (nodes or children without an id). */
export type BrowseNodeList = readonly BrowseNodeInfo[] & { readonly dropped?: readonly DroppedMember[] };

export interface UpstreamPort {
  readonly country: Country;
  /** Up to 10 distinct valid ASINs; otherwise UpstreamInvalidRequestError before any request. */
  getItems(asins: readonly string[]): Promise<GetItemsResult>;
  /**
   * One page (1-10) of the items listing a JAN/EAN-13 (or a 12-digit UPC). One call per page, so
   * that every call takes its own permit of the quota governor.
   */
  findByCode(ean: string, page: number): Promise<FindByCodeResult>;
  /** One page (1-10) of a browse node's items. */
  browseNode(nodeId: string, page: number): Promise<BrowseNodePage>;
  /** Up to 10 browse nodes with their parent and children, for walking the tree. */
  getBrowseNodes(nodeIds: readonly string[]): Promise<BrowseNodeList>;
  /** Releases keep-alive connections. */
  close(): Promise<void>;
}
