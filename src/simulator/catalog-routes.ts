/**
 * `POST /catalog/v1/{getItems,searchItems,getBrowseNodes}`: checks as the real service does, in its
 * order (credential, marketplace, eligibility, quota, request), then answers from the synthetic
 * catalogue in the Creators API's camelCase shapes.
 */
import { setTimeout as delay } from 'node:timers/promises';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { z } from 'zod';
import { ASIN_RE, type Country } from '../core/identifiers.js';
import { countryOfMarketplace, MARKETPLACES, partnerTagSuffix } from '../upstream/marketplaces.js';
import { MAX_RESULTS } from './catalog.js';
import type { SimulatorState } from './state.js';
import { unit } from './hash.js';
import {
  BROWSE_NODE_RESOURCE_NAMES,
  ERROR_STATUS,
  ITEM_RESOURCE_NAMES,
  errorBody,
  getBrowseNodesRequestSchema,
  getItemsRequestSchema,
  searchItemsRequestSchema,
  selectResources,
  type ErrorKind,
} from './wire.js';

const OPERATIONS = new Set(['getItems', 'searchItems', 'getBrowseNodes']);
/** A held request is dropped after this long even if the server keeps running. */
const HOLD_MAX_MS = 300_000;
/**
 * Share of per-second 429s sent without Retry-After. The real service's throttling answers promise
 * no such header, so a client must do without it; the rest carry one, so that both kinds are met.
 */
const NO_RETRY_AFTER_SHARE = 0.5;

type Answer = { status: number; body: Record<string, unknown>; items: number };

function fail(type: ErrorKind, message: string, extra: Record<string, unknown> = {}): Answer {
  return { status: ERROR_STATUS[type], body: errorBody(type, message, extra), items: 0 };
}

function invalid(issues: z.core.$ZodIssue[]): Answer {
  return fail('ValidationException', `1 validation error detected: ${issues[0]?.message ?? 'invalid request'}`, {
    reason: 'FieldValidationFailed',
    fieldList: issues.map((i) => ({ name: i.path.join('.') || 'body', message: i.message })),
  });
}

/**
 * A tag of another region's marketplaces (see partnerTagSuffix) is refused, so that a client cannot
 * pass here with a tag the real service would refuse.
 */
function wrongPartnerTag(country: Country, tag: string): Answer | undefined {
  if (tag.endsWith(partnerTagSuffix(country))) return undefined;
  const host = MARKETPLACES[country].host;
  return fail('ValidationException', `The partner tag ${tag} is invalid for the marketplace ${host}.`, {
    reason: 'InvalidPartnerTag',
    fieldList: [{ name: 'partnerTag', message: `must be a tracking id of ${host}` }],
  });
}

function unknownResources(resources: readonly string[], known: ReadonlySet<string>): Answer | undefined {
  const bad = resources.filter((r) => !known.has(r));
  if (!bad.length) return undefined;
  return fail('ValidationException', `The value provided for Resources is invalid: ${bad.join(', ')}`, {
    reason: 'FieldValidationFailed',
    fieldList: bad.map((r) => ({ name: 'resources', message: `unknown resource ${r}` })),
  });
}

function getItems(state: SimulatorState, country: Country, body: unknown): Answer {
  const req = getItemsRequestSchema.safeParse(body);
  if (!req.success) return invalid(req.error.issues);
  const bad = wrongPartnerTag(country, req.data.partnerTag) ?? unknownResources(req.data.resources, ITEM_RESOURCE_NAMES);
  if (bad) return bad;
  const resources = new Set(req.data.resources);
  const items: Record<string, unknown>[] = [];
  const errors: { code: string; message: string }[] = [];
  for (const id of req.data.itemIds) {
    const found = ASIN_RE.test(id) ? state.catalog.lookup(country, id, state.now(), req.data.partnerTag) : { kind: 'not_found' as const };
    if (found.kind === 'found') items.push(selectResources(found.item, resources));
    else if (found.kind === 'not_accessible')
      errors.push({ code: 'ItemNotAccessible', message: `The ItemId ${id} is not accessible through the Creators API.` });
    else errors.push({ code: 'InvalidParameterValue', message: `The ItemId ${id} provided in the request is invalid.` });
  }
  // The real service does not promise request order; neither do we.
  items.sort((a, b) => unit(state.config.seed, 'order', String(a.asin)) - unit(state.config.seed, 'order', String(b.asin)));
  return {
    status: 200,
    body: { ...(items.length ? { itemsResult: { items } } : {}), ...(errors.length ? { errors } : {}) },
    items: items.length,
  };
}

function searchItems(state: SimulatorState, country: Country, body: unknown): Answer {
  const req = searchItemsRequestSchema.safeParse(body);
  if (!req.success) return invalid(req.error.issues);
  const d = req.data;
  const bad = wrongPartnerTag(country, d.partnerTag) ?? unknownResources(d.resources, ITEM_RESOURCE_NAMES);
  if (bad) return bad;
  if (!d.keywords && !d.browseNodeId && !d.actor && !d.artist && !d.author && !d.brand && !d.title) {
    return fail('ValidationException', 'A search needs at least one of keywords, browseNodeId, actor, artist, author, brand or title.', {
      reason: 'FieldValidationFailed',
      fieldList: [{ name: 'keywords', message: 'required when no other search criterion is given' }],
    });
  }
  const all = d.browseNodeId
    ? state.catalog.browse(country, d.browseNodeId)
    : state.catalog.search(country, d.keywords ?? d.title ?? d.brand ?? d.author ?? d.artist ?? d.actor ?? '');
  const size = d.itemCount ?? 10;
  const page = d.itemPage ?? 1;
  const asins = all.slice((page - 1) * size, Math.min(page * size, MAX_RESULTS));
  // As the Creators SDK models it: a search without results is a 404 (see the client's comment).
  if (!asins.length)
    return fail('ResourceNotFoundException', 'No results found for your request.', {
      resourceId: d.browseNodeId ?? d.keywords ?? '',
      resourceType: 'SearchResult',
    });
  const resources = new Set(d.resources);
  const items = asins.flatMap((asin) => {
    const found = state.catalog.lookup(country, asin, state.now(), d.partnerTag);
    return found.kind === 'found' ? [selectResources(found.item, resources)] : [];
  });
  const host = MARKETPLACES[country].host;
  const query = d.browseNodeId ? `node=${d.browseNodeId}` : `k=${encodeURIComponent(d.keywords ?? '')}`;
  return {
    status: 200,
    body: {
      searchResult: {
        items,
        totalResultCount: all.length,
        searchURL: `https://${host}/s?${query}&tag=${encodeURIComponent(d.partnerTag)}&linkCode=osi`,
      },
    },
    items: items.length,
  };
}

function getBrowseNodes(state: SimulatorState, country: Country, body: unknown): Answer {
  const req = getBrowseNodesRequestSchema.safeParse(body);
  if (!req.success) return invalid(req.error.issues);
  const bad = wrongPartnerTag(country, req.data.partnerTag) ?? unknownResources(req.data.resources, BROWSE_NODE_RESOURCE_NAMES);
  if (bad) return bad;
  const withAncestor = req.data.resources.includes('browseNodes.ancestor');
  const withChildren = req.data.resources.includes('browseNodes.children');
  const nodes: unknown[] = [];
  const errors: { code: string; message: string }[] = [];
  for (const id of req.data.browseNodeIds) {
    if (/^[1-9]\d{0,19}$/.test(id)) nodes.push(state.catalog.node(country, id, withAncestor, withChildren));
    else errors.push({ code: 'InvalidParameterValue', message: `The BrowseNodeId ${id} provided in the request is invalid.` });
  }
  return {
    status: 200,
    body: { ...(nodes.length ? { browseNodesResult: { browseNodes: nodes } } : {}), ...(errors.length ? { errors } : {}) },
    items: 0,
  };
}

async function handle(
  state: SimulatorState,
  throttles: Map<Country, number>,
  req: Request,
  res: Response,
  op: string,
  country: Country | undefined,
  arrivedAt: number,
): Promise<Answer | 'hold'> {
  if (!OPERATIONS.has(op)) return fail('ValidationException', `Unknown operation ${op}.`, { reason: 'UnknownOperation' });
  const auth = /^Bearer\s+(\S+?)(?:,\s*Version\s+(\d+\.\d+))?$/.exec(req.get('authorization') ?? '');
  if (!auth) return fail('UnauthorizedException', 'Missing or malformed Authorization header.', { reason: 'MissingCredential' });
  const verdict = state.tokens.verify(auth[1]!, state.now());
  if (!verdict.ok)
    return fail(
      'UnauthorizedException',
      verdict.reason === 'TokenExpired' ? 'The access token has expired.' : 'The access token is invalid.',
      { reason: verdict.reason },
    );
  // v2.x (Cognito) tokens must be presented with their version.
  if (verdict.flavour === 'cognito' && !auth[2])
    return fail('UnauthorizedException', 'Version is required for 2.x credentials.', { reason: 'InvalidToken' });
  if (!country) {
    return fail('ValidationException', 'The x-marketplace header must name a supported marketplace, e.g. www.amazon.co.jp.', {
      reason: 'Other',
      fieldList: [{ name: 'x-marketplace', message: `unsupported value ${JSON.stringify(req.get('x-marketplace') ?? '')}` }],
    });
  }
  const { latencyMs } = state.faults.current;
  if (latencyMs > 0) await delay(latencyMs);
  const early = state.faults.beforeQuota(country);
  if (early === 'invalid_token') return fail('UnauthorizedException', 'The access token is invalid.', { reason: 'InvalidToken' });
  if (early === 'not_eligible') {
    return fail('AccessDeniedException', 'The Associate account is not eligible to access the Creators API.', {
      reason: 'AssociateNotEligible',
    });
  }
  // serviceCode/quotaCode values are not documented in our sources; these are descriptive stand-ins.
  const throttled = (quotaCode: string | undefined, retryAfterMs: number | undefined): Answer => {
    if (retryAfterMs !== undefined) res.set('Retry-After', String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
    state.stats.throttled(country, op);
    return fail(
      'ThrottleException',
      'Request was denied due to request throttling. Clients should implement exponential backoff and retry.',
      quotaCode ? { serviceCode: 'creatorsapi', quotaCode } : {},
    );
  };
  // An account the service will not serve here (fresh keys, no sales, the wrong marketplace) gets
  // the same 429 as a pace too fast, naming no quota: only its persistence tells them apart.
  if (early === 'refused') return throttled(undefined, 1000);
  const quota = state.quota.take(country, arrivedAt);
  if (!quota.ok) {
    if (quota.limit === 'day') return throttled('RequestsPerDay', quota.retryAfterMs);
    // Which per-second 429s go without Retry-After is drawn from the seed and their count, so a
    // run with the same seed and the same calls gets the same answers.
    const n = (throttles.get(country) ?? 0) + 1;
    throttles.set(country, n);
    const bare = unit(state.config.seed, country, 'no-retry-after', n) < NO_RETRY_AFTER_SHARE;
    return throttled('RequestsPerSecond', bare ? undefined : quota.retryAfterMs);
  }
  const late = state.faults.afterQuota();
  // A throttle beyond the quota names no quota: the service answers the same 429 when it revokes
  // an account's access, whatever the quota says.
  if (late === 'throttle') return throttled(undefined, 1000);
  if (late === 'timeout') return 'hold';
  if (late === 'error') {
    return fail('InternalServerException', 'Internal server error.');
  }
  const answer =
    op === 'getItems'
      ? getItems(state, country, req.body)
      : op === 'searchItems'
        ? searchItems(state, country, req.body)
        : getBrowseNodes(state, country, req.body);
  state.stats.items(country, op, answer.items);
  return answer;
}

const ARRIVED_AT = 'arrivedAt';

function stampArrival(state: SimulatorState): RequestHandler {
  return (_req, res, next) => {
    res.locals[ARRIVED_AT] = state.arrivalNow();
    next();
  };
}

export function catalogRoutes(state: SimulatorState): Router {
  const router = express.Router();
  /** Per-second 429s answered so far, per country. */
  const throttles = new Map<Country, number>();
  // The service reads a call's time when it arrives, before anything it does with it: this
  // process's own work (parsing, a cold code path, a busy event loop) is no jitter of the network's.
  router.post('/catalog/v1/:operation', stampArrival(state), express.json({ limit: '64kb' }), async (req, res) => {
    const arrivedAt = res.locals[ARRIVED_AT] as number;
    const op = String(req.params.operation);
    const country = countryOfMarketplace(req.get('x-marketplace') ?? '');
    const counted = country && OPERATIONS.has(op) ? country : undefined;
    if (counted) state.stats.call(counted, op);
    const answer = await handle(state, throttles, req, res, op, country, arrivedAt);
    if (answer === 'hold') {
      state.held.add(res);
      const timer = setTimeout(() => res.socket?.destroy(), HOLD_MAX_MS);
      timer.unref();
      res.once('close', () => {
        clearTimeout(timer);
        state.held.delete(res);
      });
      return;
    }
    if (answer.status >= 400) res.set('x-amzn-ErrorType', String(answer.body.type));
    // 429s are counted where they are decided; every other refusal or failure counts as an error.
    if (counted && answer.status >= 400 && answer.status !== 429) state.stats.error(counted, op);
    res.status(answer.status).json(answer.body);
  });
  return router;
}
