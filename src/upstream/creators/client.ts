/**
 * The Creators API adapter of the upstream port: one instance per country. It validates before
 * sending, authenticates with a cached client-credentials token (renewed once on a 401), posts the
 * camelCase operations and turns answers into normalised items and typed errors.
 */
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import type { Country } from '../../catalog/identifiers.js';
import type { ItemOutcome, UpstreamItem } from '../../catalog/product.js';
import {
  UpstreamAuthError,
  UpstreamInvalidRequestError,
  UpstreamNotEligibleError,
  UpstreamRateLimitedError,
  UpstreamUnavailableError,
} from '../../errors/index.js';
import {
  MAX_PAGE,
  type BrowseNodeInfo,
  type BrowseNodePage,
  type FindByCodeResult,
  type GetItemsResult,
  type UpstreamPort,
} from '../port.js';
import { checkAsinBatch, checkBrowseNodeId, checkBrowseNodeIds, checkEan, checkPage } from '../validate.js';
import type { CredentialVersion } from './credentials.js';
import { post, retryAfterMs, type HttpAnswer } from './http.js';
import { normalizeItem } from './normalize.js';
import type { TokenSource } from './token.js';
import {
  BROWSE_NODE_RESOURCES,
  CATALOG_PATH_PREFIX,
  ITEM_RESOURCES,
  errorBodySchema,
  getBrowseNodesResponseSchema,
  getItemsResponseSchema,
  searchItemsResponseSchema,
  type Operation,
  type WireErrorData,
} from './wire.js';

/** When the upstream throttles without saying for how long: the 1 request/s baseline quota. */
const DEFAULT_RETRY_AFTER_MS = 1000;
const PAGE_SIZE = 10;

export interface CreatorsClientOptions {
  readonly country: Country;
  readonly marketplace: string;
  readonly apiUrl: string;
  readonly partnerTag: string;
  readonly credentialVersion: CredentialVersion;
  readonly tokens: TokenSource;
  readonly dispatcher: Dispatcher;
  readonly timeoutMs: number;
  /** Called by close(); the factory passes the dispatcher's close when this client owns it. */
  readonly onClose?: () => Promise<void>;
  readonly now?: () => number;
  /**
   * Awaited right before every catalog request goes on the wire, the re-send after a 401 included:
   * where the quota governor hands out its permit.
   */
  readonly beforeSend?: () => Promise<void>;
}

export class CreatorsClient implements UpstreamPort {
  readonly country: Country;
  readonly #now: () => number;

  constructor(private readonly opts: CreatorsClientOptions) {
    this.country = opts.country;
    this.#now = opts.now ?? Date.now;
  }

  async getItems(asins: readonly string[]): Promise<GetItemsResult> {
    const itemIds = checkAsinBatch(asins);
    const data = await this.#call(
      'getItems',
      { partnerTag: this.opts.partnerTag, itemIds, resources: [...ITEM_RESOURCES] },
      getItemsResponseSchema,
    );
    const wanted = new Set(itemIds);
    const byAsin = new Map<string, UpstreamItem>();
    // Items come back in any order and failed ids are left out of them: match by ASIN only.
    for (const wire of data?.itemsResult?.items ?? []) {
      const item = normalizeItem(wire);
      if (wanted.has(item.asin)) byAsin.set(item.asin, item);
    }
    const errorCodes = errorsByAsin(data?.errors ?? [], wanted);
    const outcomes: Record<string, ItemOutcome> = {};
    for (const asin of itemIds) {
      outcomes[asin] = byAsin.has(asin) ? 'found' : errorCodes.get(asin) === 'ItemNotAccessible' ? 'not_accessible' : 'not_found';
    }
    return { items: itemIds.flatMap((a) => byAsin.get(a) ?? []), outcomes };
  }

  /**
   * The official recipe: searchItems with the code as keywords, keeping only items
   * whose EAN list holds it. A next page is worth a call only when this one was full and matched
   * throughout: results are ranked by relevance, so the first unrelated hit means the code's own
   * items have all been listed, and each page spends a call of a scarce quota.
   */
  async findByCode(raw: string, rawPage: number): Promise<FindByCodeResult> {
    const ean = checkEan(raw);
    const page = checkPage(rawPage);
    const data = await this.#call(
      'searchItems',
      {
        partnerTag: this.opts.partnerTag,
        keywords: ean,
        searchIndex: 'All',
        itemCount: PAGE_SIZE,
        itemPage: page,
        resources: [...ITEM_RESOURCES],
      },
      searchItemsResponseSchema,
    );
    const items = (data?.searchResult?.items ?? []).map(normalizeItem);
    const matching = new Map<string, UpstreamItem>();
    for (const i of items) if (i.eans.includes(ean)) matching.set(i.asin, i);
    const hasMore = page < MAX_PAGE && items.length === PAGE_SIZE && matching.size === items.length;
    return { ean, page, items: [...matching.values()], hasMore };
  }

  /** A browse node's items through searchItems with browseNodeId, 10 per page, 10 pages at most. */
  async browseNode(rawNodeId: string, rawPage: number): Promise<BrowseNodePage> {
    const nodeId = checkBrowseNodeId(rawNodeId);
    const page = checkPage(rawPage);
    const data = await this.#call(
      'searchItems',
      {
        partnerTag: this.opts.partnerTag,
        browseNodeId: nodeId,
        itemCount: PAGE_SIZE,
        itemPage: page,
        resources: [...ITEM_RESOURCES],
      },
      searchItemsResponseSchema,
    );
    const items = (data?.searchResult?.items ?? []).map(normalizeItem);
    const total = data?.searchResult?.totalResultCount ?? null;
    const hasMore = page < MAX_PAGE && (total !== null ? page * PAGE_SIZE < total : items.length === PAGE_SIZE);
    return {
      nodeId,
      page,
      items,
      outcomes: Object.fromEntries(items.map((i) => [i.asin, 'found' as const])),
      totalResults: total,
      hasMore,
    };
  }

  async getBrowseNodes(rawIds: readonly string[]): Promise<readonly BrowseNodeInfo[]> {
    const browseNodeIds = checkBrowseNodeIds(rawIds);
    const data = await this.#call(
      'getBrowseNodes',
      {
        partnerTag: this.opts.partnerTag,
        browseNodeIds,
        resources: [...BROWSE_NODE_RESOURCES],
      },
      getBrowseNodesResponseSchema,
    );
    return (data?.browseNodesResult?.browseNodes ?? []).map((n) => ({
      id: n.id,
      name: n.displayName ?? n.contextFreeName ?? null,
      isRoot: n.isRoot ?? false,
      parentId: n.ancestor?.id ?? null,
      children: (n.children ?? []).map((c) => ({ id: c.id, name: c.displayName ?? c.contextFreeName ?? null })),
    }));
  }

  async close(): Promise<void> {
    await this.opts.onClose?.();
  }

  /** Sends one operation; a 401 renews the token and tries once more, then is fatal. 404: null. */
  async #call<S extends z.ZodType>(op: Operation, body: object, schema: S): Promise<z.infer<S> | null> {
    const first = await this.opts.tokens.get();
    let res = await this.#send(op, body, first);
    if (res.status === 401) {
      this.opts.tokens.invalidate(first);
      res = await this.#send(op, body, await this.opts.tokens.get());
    }
    if (res.status >= 200 && res.status < 300) {
      const parsed = schema.safeParse(res.json);
      if (!parsed.success) {
        throw new UpstreamUnavailableError(
          `${op} answered ${res.status} with a body we cannot read: ${parsed.error.issues[0]?.path.join('.')} ${parsed.error.issues[0]?.message}`,
          res.status,
        );
      }
      return parsed.data as z.infer<S>;
    }
    // CONFLICT: PA-API answered "no results" as a 200 with errors[NoResults];
    // the Creators SDK maps it to 404 ResourceNotFound. Both mean an empty result here.
    if (res.status === 404) return null;
    throw this.#error(op, res);
  }

  async #send(op: Operation, body: object, token: string): Promise<HttpAnswer> {
    await this.opts.beforeSend?.();
    const v = this.opts.credentialVersion;
    return post(
      this.opts.dispatcher,
      `${this.opts.apiUrl}${CATALOG_PATH_PREFIX}${op}`,
      {
        // v2.x (Cognito) credentials name their version in the header; v3.x (LwA) do not.
        authorization: v.flavour === 'cognito' ? `Bearer ${token}, Version ${v.version}` : `Bearer ${token}`,
        'x-marketplace': this.opts.marketplace,
        'content-type': 'application/json; charset=utf-8',
        accept: 'application/json',
      },
      JSON.stringify(body),
      this.opts.timeoutMs,
    );
  }

  #error(op: Operation, res: HttpAnswer): Error {
    const parsed = errorBodySchema.safeParse(res.json);
    const b = parsed.success ? parsed.data : {};
    const message = b.message ?? (res.text.slice(0, 200) || `HTTP ${res.status}`);
    const reason = b.reason ?? b.type ?? `HTTP ${res.status}`;
    const { country } = this;
    if (res.status === 401) return new UpstreamAuthError(country, reason, message);
    if (res.status === 403 || (res.status === 400 && b.reason === 'InvalidAssociate'))
      return new UpstreamNotEligibleError(country, reason, message);
    if (res.status === 429) {
      return new UpstreamRateLimitedError(
        country,
        retryAfterMs(res.headers['retry-after'], this.#now()) ?? DEFAULT_RETRY_AFTER_MS,
        b.quotaCode,
      );
    }
    if (res.status >= 500) return new UpstreamUnavailableError(`${op} failed upstream with ${res.status}: ${message}`, res.status);
    return new UpstreamInvalidRequestError(`${op} refused (${res.status} ${reason}): ${message}`, reason, b.fieldList ?? []);
  }
}

/**
 * Per-item errors name the ASIN only in their message ("The ItemId B0… provided in the request is
 * invalid."), so we find the requested ASINs in each message.
 */
function errorsByAsin(errors: readonly WireErrorData[], wanted: ReadonlySet<string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of errors) {
    for (const m of e.message.matchAll(/\b[0-9A-Z]{10}\b/g)) if (wanted.has(m[0])) out.set(m[0], e.code);
  }
  return out;
}
