/**
 * The Creators API adapter of the upstream port: one instance per country. It validates before
 * sending, authenticates with a cached client-credentials token (renewed once on a 401), posts the
 * camelCase operations and turns answers into normalised items and typed errors.
 */
import type { Dispatcher } from 'undici';
import type { z } from 'zod';
import type { Country } from '../../core/identifiers.js';
import type { ItemOutcome, UpstreamItem } from '../../core/product.js';
import {
  UpstreamAuthError,
  UpstreamConfigError,
  UpstreamInvalidRequestError,
  UpstreamNotEligibleError,
  UpstreamRateLimitedError,
  UpstreamUnavailableError,
} from '../../core/errors.js';
import {
  MAX_PAGE,
  type BrowseNodeInfo,
  type BrowseNodeList,
  type BrowseNodePage,
  type DroppedMember,
  type FindByCodeResult,
  type GetItemsResult,
  type UpstreamPort,
} from '../port.js';
import { checkAsinBatch, checkBrowseNodeId, checkBrowseNodeIds, checkEan, checkPage } from '../validate.js';
import type { CredentialVersion } from './credentials.js';
import { post, retryAfterMs, type HttpAnswer } from './http.js';
import type { BeforeSend } from './sent-at.js';
import { normalizeItem } from './normalize.js';
import { readBrowseNodes, readErrors, readItems } from './read.js';
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
  type WireErrorBody,
  type WireErrorData,
} from './wire.js';

/** One interval of the 1 request/s baseline quota, for a client that was not told its country's. */
const DEFAULT_PACE_MS = 1000;
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
  /**
   * One interval of the country's quota (1/Q in ms): how long a 429 that does not say (no
   * Retry-After) asks us to wait. The service throttles a call that came too soon after the one
   * before, so one interval is what it takes; a fixed second would be too long at Q > 1 and too
   * short at Q < 1.
   */
  readonly paceMs?: number;
  /** Called by close(); the factory passes the dispatcher's close when this client owns it. */
  readonly onClose?: () => Promise<void>;
  readonly now?: () => number;
  /**
   * Awaited right before every catalog request goes on the wire, the re-send after a 401 included:
   * where the quota governor hands out its permit; what it returns hears when the request went.
   */
  readonly beforeSend?: BeforeSend;
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
    const dropped: DroppedMember[] = [];
    // Items come back in any order and failed ids are left out of them: match by ASIN only.
    for (const wire of readItems(data?.itemsResult?.items, dropped)) {
      const item = normalizeItem(wire);
      if (wanted.has(item.asin)) byAsin.set(item.asin, item);
    }
    // An item we could not file may be any ASIN that nothing else accounts for: those stay unknown
    // rather than be recorded as not found.
    const unfiled = dropped.some((d) => d.member === 'item');
    const errorCodes = errorsByAsin(readErrors(data?.errors, dropped), wanted);
    const outcomes: Record<string, ItemOutcome> = {};
    for (const asin of itemIds) {
      const code = errorCodes.get(asin);
      if (byAsin.has(asin)) outcomes[asin] = 'found';
      else if (code !== undefined) outcomes[asin] = code === 'ItemNotAccessible' ? 'not_accessible' : 'not_found';
      else if (!unfiled) outcomes[asin] = 'not_found';
    }
    return { items: itemIds.flatMap((a) => byAsin.get(a) ?? []), outcomes, ...(dropped.length ? { dropped } : {}) };
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
    const listed = data?.searchResult?.items ?? [];
    const dropped: DroppedMember[] = [];
    const items = readItems(listed, dropped).map(normalizeItem);
    const matching = new Map<string, UpstreamItem>();
    for (const i of items) if (i.eans.includes(ean)) matching.set(i.asin, i);
    // A page is full by what the service listed; an item we could not read does not end the run
    // of the code's own items (at worst it costs one more page).
    const hasMore = page < MAX_PAGE && listed.length === PAGE_SIZE && matching.size === items.length;
    return { ean, page, items: [...matching.values()], hasMore, ...(dropped.length ? { dropped } : {}) };
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
    const listed = data?.searchResult?.items ?? [];
    const dropped: DroppedMember[] = [];
    const items = readItems(listed, dropped).map(normalizeItem);
    const total = data?.searchResult?.totalResultCount ?? null;
    const hasMore = page < MAX_PAGE && (total !== null ? page * PAGE_SIZE < total : listed.length === PAGE_SIZE);
    return {
      nodeId,
      page,
      items,
      outcomes: Object.fromEntries(items.map((i) => [i.asin, 'found' as const])),
      totalResults: total,
      hasMore,
      ...(dropped.length ? { dropped } : {}),
    };
  }

  async getBrowseNodes(rawIds: readonly string[]): Promise<BrowseNodeList> {
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
    const dropped: DroppedMember[] = [];
    const nodes = readBrowseNodes(data?.browseNodesResult?.browseNodes, dropped).map((n): BrowseNodeInfo => ({
      id: n.id,
      name: n.displayName ?? n.contextFreeName ?? null,
      isRoot: n.isRoot ?? false,
      parentId: n.ancestor?.id ?? null,
      children: (n.children ?? []).map((c) => ({ id: c.id, name: c.displayName ?? c.contextFreeName ?? null })),
    }));
    return dropped.length ? Object.assign(nodes, { dropped }) : nodes;
  }

  async close(): Promise<void> {
    await this.opts.onClose?.();
  }

  /**
   * Sends one operation; a 401 renews the token and tries once more, then is fatal. A 404 that
   * says ResourceNotFound: null (no results).
   */
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
    // the Creators SDK maps it to 404 ResourceNotFound. Both mean an empty result here. Any other
    // 404 (an HTML page, a body we do not know) comes from something that is not the catalog API:
    // a wrong base URL, which would otherwise read as "nothing found" for ever.
    if (res.status === 404) {
      if (saysNoResults(res)) return null;
      throw new UpstreamConfigError(
        this.country,
        'NotTheCatalogApi',
        `${this.opts.apiUrl}${CATALOG_PATH_PREFIX}${op} answered 404 with ${describeBody(res)} instead of the API's ResourceNotFound: ` +
          'CREATORS_API_URL (SIMULATOR_URL with UPSTREAM=simulator) does not point at the Creators API',
      );
    }
    throw this.#error(op, res);
  }

  async #send(op: Operation, body: object, token: string): Promise<HttpAnswer> {
    const onSent = await this.opts.beforeSend?.();
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
      onSent,
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
    // The tag is ours to fix, and every call of the country carries it: stop the country.
    if (res.status === 400 && b.reason === 'InvalidPartnerTag') {
      return new UpstreamConfigError(
        country,
        'InvalidPartnerTag',
        `${message} (CREATORS_PARTNER_TAG_${country} is ${JSON.stringify(this.opts.partnerTag)}: it must be a tracking id of ${this.opts.marketplace})`,
      );
    }
    if (res.status === 429) {
      // The quota is named in quotaCode; a body that names it only in reason is read the same way,
      // so that a daily quota is recognised either way (the governed port marks the day spent).
      const said = retryAfterMs(res.headers['retry-after'], this.#now());
      return new UpstreamRateLimitedError(
        country,
        said ?? this.opts.paceMs ?? DEFAULT_PACE_MS,
        b.quotaCode ?? b.reason,
        said !== undefined,
      );
    }
    if (res.status >= 500) return new UpstreamUnavailableError(`${op} failed upstream with ${res.status}: ${message}`, res.status);
    return new UpstreamInvalidRequestError(`${op} refused (${res.status} ${reason}): ${message}`, reason, b.fieldList ?? []);
  }
}

/** Whether a 404 is the API's own "no results": ResourceNotFound (or NoResults) named in the body or the error-type header. */
function saysNoResults(res: HttpAnswer): boolean {
  const named = /^(?:[\w.]+#)?(?:ResourceNotFound|NoResults)/;
  const header = res.headers['x-amzn-errortype'];
  if (named.test(Array.isArray(header) ? (header[0] ?? '') : (header ?? ''))) return true;
  const parsed = errorBodySchema.safeParse(res.json);
  if (!parsed.success) return false;
  const b: WireErrorBody = parsed.data;
  if ([b.type, b.__type, b.code, b.reason].some((v) => v !== undefined && named.test(v))) return true;
  const errors = (res.json as { errors?: unknown }).errors;
  return Array.isArray(errors) && errors.some((e) => named.test(String((e as { code?: unknown } | null)?.code ?? '')));
}

/** A few words on an answer's body for an error message: its type and start, never all of it. */
function describeBody(res: HttpAnswer): string {
  const type = res.headers['content-type'];
  const text = res.text.replace(/\s+/g, ' ').trim().slice(0, 120);
  return text ? `${String(type ?? 'a body')} ${JSON.stringify(text)}` : 'no body';
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
