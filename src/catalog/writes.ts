import mongoose, { type Connection } from 'mongoose';
import type { Config } from '../../config/env.js';
import type { Country } from '../core/identifiers.js';
import type { ItemOutcome, UpstreamItem } from '../core/product.js';
import { productModel, type ProductFields } from '../models/product.js';
import { orderedSearchKeys } from '../search/ordered-keys.js';
import { appendHistory, changeOf, pointOfProduct, sameOffer, valuesOfItem, type PriorState, type ProductChange } from './history.js';
import { groupPrior } from '../scheduling/rate-groups.js';
import { rateLevelsOf, type RateLevels } from '../core/rate-levels.js';
import { estimateRate, nextRefreshAt, posteriorRate, priorHours, withObservation } from '../scheduling/change-rate.js';
import type { RefreshPolicy } from '../scheduling/refresh-objective.js';
import { dayNumber, dealFigures, withDayPrice, type PriceDay } from '../core/price-levels.js';
import { upsertProducts, type ProductUpsert } from './product-upserts.js';

export interface WriteResult {
  readonly found: number;
  readonly notFound: number;
  readonly notAccessible: number;
  /** The history points the batch appended. */
  readonly changes: readonly ProductChange[];
  /** Found products whose price or availability moved since they were last seen (what the scheduler learns from). */
  readonly moved: number;
}

export interface WriteOptions {
  readonly now?: Date;
  /** The country's tuned refresh policy: priority 0's next refreshes follow it (src/scheduling/refresh-objective.ts). */
  readonly policy?: RefreshPolicy | null;
  /**
   * Called with the batch's changes while their points are written, and awaited before the products
   * are: it may read at once, but starts nothing (alert deliveries) until `pointsWritten` resolves.
   * What it starts is keyed by the change, so when the product write fails and the batch runs again,
   * it sees the same changes and starts nothing twice, and nothing is lost.
   */
  readonly onChanges?: (changes: readonly ProductChange[], pointsWritten: Promise<void>) => Promise<void>;
  /**
   * The products' state read before the upstream call (readPrior): a batch holds its products'
   * claim while the call is out, so nothing else refreshes them meanwhile. Products it does not
   * name are read here.
   */
  readonly prior?: PriorStates;
}

type HistoryConfig = Pick<Config, 'alerts'>;

/** The fields an upstream item sets on its product. */
function dataOf(item: UpstreamItem, levels: RateLevels = rateLevelsOf(item)): Partial<ProductFields> {
  return {
    title: item.title,
    brand: item.brand,
    image: item.image,
    url: item.url,
    ean: item.eans,
    price: item.price,
    availability: item.availability,
    buybox: item.buyBox,
    sales_rank: item.salesRank,
    browse_nodes: item.browseNodes.map((n) => ({ id: n.id, name: n.name ?? null })),
    raw: item.raw,
    search_keys: orderedSearchKeys(item.title, item.brand),
    rate_levels: levels,
  };
}

const PRIOR_FIELDS = {
  asin: 1,
  priority: 1,
  price: 1,
  availability: 1,
  buybox: 1,
  sales_rank: 1,
  updated_at: 1,
  history_at: 1,
  rate_obs: 1,
  price_days: 1,
} as const;

type Prior = PriorState & Pick<ProductFields, 'priority' | 'rate_obs' | 'price_days'>;

/** Each asked product's state before a refresh, by ASIN; null when there is no such product (or it did not match). */
export type PriorStates = ReadonlyMap<string, (Prior & { asin: string }) | null>;

/** The state of a country's products before a refresh, in one query; `filter` narrows it (a plan's claim). */
export async function readPrior(
  conn: Connection,
  country: Country,
  asins: readonly string[],
  filter: Readonly<Record<string, unknown>> = {},
): Promise<PriorStates> {
  const found = await productModel(conn)
    .find({ ...filter, country, asin: mongoose.trusted({ $in: [...asins] }) })
    .select(PRIOR_FIELDS)
    .lean<(Prior & { asin: string })[]>();
  const byAsin = new Map(found.map((p) => [p.asin, p]));
  return new Map(asins.map((a) => [a, byAsin.get(a) ?? null]));
}

/**
 * The product's change-rate estimate after this observation (src/scheduling/change-rate.ts), the
 * rate its schedule goes by (the posterior with the country's estimates as prior, for priority 0
 * under a tuned policy; the estimate otherwise), and whether the observation saw it move. The first
 * observation has nothing to compare with.
 */
function learnRate(
  config: Pick<Config, 'refresh'>,
  prior: Prior | undefined,
  item: UpstreamItem,
  levels: RateLevels,
  now: Date,
  policy: RefreshPolicy | null,
) {
  const window = prior?.rate_obs ?? [];
  const last = prior ? pointOfProduct(prior) : null;
  const seen = last !== null && !sameOffer(last, valuesOfItem(item));
  const next = prior?.updated_at
    ? withObservation(window, { hours: (now.getTime() - prior.updated_at.getTime()) / 3_600_000, changed: seen })
    : window;
  const estimate = estimateRate(next, priorHours(config, prior?.priority ?? 0));
  const posterior = prior?.priority === 0 && policy?.prior ? posteriorRate(next, groupPrior(policy.groups, levels, policy.prior)) : null;
  return { rate_obs: next, change_rate: estimate, sched_rate: posterior ?? estimate, seen };
}

/**
 * The deals feed's figures after this observation: the day's aggregates with its price added, and
 * the levels and drops they give (src/core/price-levels.ts). A product without a price keeps its
 * days and is a deal by nothing.
 */
export function dealFieldsOf(
  priorDays: readonly PriceDay[] | undefined,
  price: number | null,
  now: Date,
): Pick<ProductFields, 'price_days' | 'price_levels' | 'drop'> {
  const day = dayNumber(now);
  const days = price === null ? [...(priorDays ?? [])] : withDayPrice(priorDays ?? [], price, day);
  const { levels, drop } = dealFigures(days, price, day);
  return { price_days: days, price_levels: levels, drop };
}

/**
 * The products' state before the batch (one query), the changes the items make to them, and their
 * history points written. Returns the changes, and each product's prior state.
 */
async function recordChanges(
  conn: Connection,
  config: HistoryConfig,
  country: Country,
  asins: readonly string[],
  items: readonly UpstreamItem[],
  opts: WriteOptions & { now: Date },
): Promise<{ prior: Map<string, Prior>; changes: ProductChange[] }> {
  const given = opts.prior;
  const missing = given ? asins.filter((a) => !given.has(a)) : asins;
  const read = missing.length ? await readPrior(conn, country, missing) : new Map();
  const prior = new Map<string, Prior>();
  for (const a of asins) {
    const p = given?.get(a) ?? read.get(a);
    if (p) prior.set(a, p);
  }
  const changes = items.flatMap((item) => changeOf(country, item, prior.get(item.asin), opts.now) ?? []);
  const written = appendHistory(conn, config.alerts.historyDays, changes);
  if (changes.length > 0 && opts.onChanges) await Promise.all([written, opts.onChanges(changes, written)]);
  else await written;
  return { prior, changes };
}

/** What a found item sets besides its data: its history point's time when it made one. */
function historyMark(changes: readonly ProductChange[], now: Date): (asin: string) => Partial<ProductFields> {
  const changed = new Set(changes.map((c) => c.asin));
  return (asin) => (changed.has(asin) ? { history_at: now } : {});
}

/**
 * Writes what the upstream answered for a batch in one unordered bulkWrite, upserting by
 * (country, asin): found items get their data and `updated_at`; not-found and inaccessible ones are
 * recorded as such (no retry: their next attempt is at their usual interval). Every product's next
 * refresh is set from its effective priority; a product nobody watches is left off the schedule.
 * `created_at` is set only when the product is new. Changes of found items append history points
 * first (src/catalog/history.ts).
 */
export async function writeOutcomes(
  conn: Connection,
  config: Pick<Config, 'refresh'> & HistoryConfig,
  country: Country,
  items: readonly UpstreamItem[],
  outcomes: Readonly<Record<string, ItemOutcome>>,
  options: WriteOptions = {},
): Promise<WriteResult> {
  const now = options.now ?? new Date();
  const asins = Object.keys(outcomes);
  const byAsin = new Map(items.map((i) => [i.asin, i]));
  const foundItems = asins.flatMap((a) => (outcomes[a] === 'found' && byAsin.has(a) ? [byAsin.get(a)!] : []));
  const { prior, changes } = await recordChanges(conn, config, country, asins, foundItems, { ...options, now });
  const mark = historyMark(changes, now);
  let found = 0;
  let notFound = 0;
  let notAccessible = 0;
  let seen = 0;

  const upserts = asins.map((asin): ProductUpsert => {
    const outcome = outcomes[asin]!;
    const priority = prior.get(asin)?.priority ?? null;
    // The refresh ends every claim on the product: a batch still queued with it skips the product.
    const schedule = {
      last_attempt_at: now,
      next_refresh_at: nextRefreshAt({ why: 'refreshed', config, priority, lastAttemptAt: now, changeRate: null, now }),
      plan_token: null,
    };
    const item = byAsin.get(asin);
    let set: Partial<ProductFields>;
    if (outcome === 'found' && item) {
      found++;
      const levels = rateLevelsOf(item);
      const { seen: moved, ...rate } = learnRate(config, prior.get(asin), item, levels, now, options.policy ?? null);
      if (moved) seen++;
      set = {
        ...dataOf(item, levels),
        ...schedule,
        next_refresh_at: nextRefreshAt({
          why: 'refreshed',
          config,
          priority,
          lastAttemptAt: now,
          changeRate: rate.sched_rate,
          policy: options.policy ?? null,
          now,
        }),
        ...rate,
        ...dealFieldsOf(prior.get(asin)?.price_days, item.price?.amount ?? null, now),
        ...mark(asin),
        status: 'ok',
        last_error: null,
        updated_at: now,
      };
    } else if (outcome === 'not_accessible') {
      notAccessible++;
      // Nothing on offer any more: it leaves the deals lists (its days stay for when it returns).
      set = { ...schedule, status: 'not_accessible', last_error: 'the upstream does not give access to this item', drop: {} };
    } else {
      notFound++;
      set = { ...schedule, status: 'not_found', last_error: 'the upstream does not know this ASIN in this country', drop: {} };
    }
    return { country, asin, set, setOnInsert: { created_at: now, priority: null } };
  });
  await upsertProducts(conn, upserts);
  return { found, notFound, notAccessible, changes, moved: seen };
}

/** Upserts items found by a search or a crawl, keeping each product's schedule as it is; their changes make history too. */
export async function writeFoundItems(
  conn: Connection,
  config: HistoryConfig,
  country: Country,
  items: readonly UpstreamItem[],
  options: WriteOptions = {},
): Promise<readonly ProductChange[]> {
  if (items.length === 0) return [];
  const now = options.now ?? new Date();
  const { prior, changes } = await recordChanges(conn, config, country, [...new Set(items.map((i) => i.asin))], items, {
    ...options,
    now,
  });
  const mark = historyMark(changes, now);
  await upsertProducts(
    conn,
    items.map((item) => ({
      country,
      asin: item.asin,
      set: {
        ...dataOf(item),
        ...dealFieldsOf(prior.get(item.asin)?.price_days, item.price?.amount ?? null, now),
        ...mark(item.asin),
        status: 'ok',
        last_error: null,
        updated_at: now,
        last_attempt_at: now,
      },
      setOnInsert: { created_at: now, priority: null, next_refresh_at: nextRefreshAt({ why: 'unwatched' }) },
    })),
  );
  return changes;
}
