import mongoose, { type Connection, type Types } from 'mongoose';
import { alertModel, isChatChannel, ALERT_IDENTITY_INDEX, ALERT_SLOT_INDEX, type AlertFields } from '../../models/alert.js';
import { endpointModel } from '../../models/endpoint.js';
import { isDuplicateKey } from '../../db/mongo.js';
import type { Logger } from '../../logger.js';
import type { Country } from '../../core/identifiers.js';
import { alertIdentity } from './identity.js';

/**
 * The unique index of one alert per account, country, ASIN and kind, which several alerts per
 * product replace. While it exists the alerts have not all been migrated: it is dropped last.
 */
export const LEGACY_PER_KIND_INDEX = 'alert_per_product_kind';

/** Product groups whose endpoints are read in one query. */
const GROUPS_PER_BATCH = 500;

type Stored = Pick<
  AlertFields,
  | '_id'
  | 'kind'
  | 'price'
  | 'percent'
  | 'rank'
  | 'amount'
  | 'reference'
  | 'days'
  | 'rearm_above'
  | 'rearm_after_ms'
  | 'channel'
  | 'webhook_url'
  | 'endpoint_id'
  | 'identity'
  | 'slot'
  | 'created_at'
>;

interface ProductGroup {
  _id: { user_id: Types.ObjectId; country: Country; asin: string };
  alerts: Stored[];
}

/**
 * The endpoint key a stored alert delivers to: its endpoint's, or its own URL for an alert of before
 * endpoints (the key the endpoint it moves to will have), so that moving it keeps its identity.
 */
function targetKeyOf(alert: Stored, endpointKeys: ReadonlyMap<string, string>): string {
  const key = alert.endpoint_id ? endpointKeys.get(alert.endpoint_id.toHexString()) : undefined;
  if (key !== undefined) return key;
  const channel = alert.channel ?? 'webhook';
  // An endpoint gone from under its alert: a chat alert has only its redacted URL left, which no new key can equal.
  return isChatChannel(channel) ? `${channel}:${alert.webhook_url}` : alert.webhook_url;
}

/**
 * Gives every alert stored while alerts were one per account, country, ASIN and kind its
 * `identity` and `slot` (and the alerts of before that index, which could repeat a kind), builds
 * the new unique indexes, then drops the old one: the alerts of before all stay, and an account
 * may then hold several per product and kind. Runs only until the new index is there and the old
 * one gone, so a start after the first costs one listIndexes, and a start that stopped half-way
 * does it again. Safe when processes run it at once: each alert's values follow from its
 * product's alerts in creation order (the same in every process), writes only fill what is
 * missing, and a place or identity that another writer took meanwhile is taken afresh. Two old
 * alerts that come out identical (an old process wrote one since) both stay, the later one under
 * an identity of its own. Answers how many alerts it filled.
 */
export async function migrateAlertIdentities(conn: Connection, logger: Logger): Promise<number> {
  const alerts = alertModel(conn);
  const indexes = await alerts.collection.indexes().catch(() => []);
  // No collection yet; or migrated (the new index there and the old one gone). An older database has neither.
  const has = (name: string) => indexes.some((i) => i.name === name);
  if (indexes.length === 0 || (has(ALERT_IDENTITY_INDEX) && !has(LEGACY_PER_KIND_INDEX))) return 0;
  let filled = 0;
  let batch: ProductGroup[] = [];
  const flush = async () => {
    filled += await fillGroups(conn, batch);
    batch = [];
  };
  const cursor = alerts
    .aggregate<ProductGroup>([
      { $group: { _id: { user_id: '$user_id', country: '$country', asin: '$asin' }, alerts: { $push: '$$ROOT' } } },
    ])
    .allowDiskUse(true)
    .cursor();
  for await (const group of cursor) {
    batch.push(group);
    if (batch.length >= GROUPS_PER_BATCH) await flush();
  }
  await flush();
  await alerts.createIndexes();
  await alerts.collection.dropIndex(LEGACY_PER_KIND_INDEX).catch((err: { code?: number }) => {
    // Another process dropped it first.
    if (err.code !== 27) throw err;
  });
  logger.info({ filled }, 'alerts may now be several per product and kind (identities and places filled)');
  return filled;
}

async function fillGroups(conn: Connection, groups: readonly ProductGroup[]): Promise<number> {
  const endpointIds = groups.flatMap((g) => g.alerts.flatMap((a) => (a.endpoint_id && a.identity === undefined ? [a.endpoint_id] : [])));
  const endpoints = endpointIds.length
    ? await endpointModel(conn)
        .find({ _id: mongoose.trusted({ $in: endpointIds }) })
        .select({ url: 1 })
        .lean()
    : [];
  const keys = new Map(endpoints.map((e) => [e._id.toHexString(), e.url]));
  let filled = 0;
  for (const group of groups) filled += await fillGroup(conn, group, keys);
  return filled;
}

/** One product's alerts, oldest first: the first of each identity and place keeps it, the others get the next free one. */
async function fillGroup(conn: Connection, group: ProductGroup, endpointKeys: ReadonlyMap<string, string>): Promise<number> {
  const time = (a: Stored) => a.created_at?.getTime() ?? 0;
  const ordered = [...group.alerts].sort((a, b) => time(a) - time(b) || a._id.toHexString().localeCompare(b._id.toHexString()));
  const slots = new Set<number>();
  const identities = new Set<string>();
  const wanted: { alert: Stored; set: { identity?: string; slot?: number } }[] = [];
  for (const alert of ordered) {
    let identity = alert.identity ?? alertIdentity(alert, targetKeyOf(alert, endpointKeys));
    if (identities.has(`${alert.kind}.${identity}`)) identity = `${identity}.${alert._id.toHexString()}`;
    identities.add(`${alert.kind}.${identity}`);
    const kept = alert.slot !== undefined && alert.slot !== null && !slots.has(alert.slot);
    const slot = kept ? alert.slot! : nextFree(slots);
    slots.add(slot);
    const set = { ...(identity !== alert.identity ? { identity } : {}), ...(slot !== alert.slot ? { slot } : {}) };
    if (Object.keys(set).length > 0) wanted.push({ alert, set });
  }
  const alerts = alertModel(conn);
  for (const { alert, set } of wanted) {
    for (let tries = 0; ; tries++) {
      try {
        await alerts.updateOne({ _id: alert._id }, { $set: set });
        break;
      } catch (err) {
        if (!isDuplicateKey(err) || tries >= 20) throw err;
        // Another writer took the place (or the identity) meanwhile: the next free place, or an identity of its own.
        if (String((err as Error).message).includes(ALERT_SLOT_INDEX)) {
          const taken = await alerts
            .find({
              user_id: group._id.user_id,
              country: group._id.country,
              asin: group._id.asin,
              _id: mongoose.trusted({ $ne: alert._id }),
            })
            .select({ slot: 1 })
            .lean();
          set.slot = nextFree(new Set(taken.flatMap((a) => (typeof a.slot === 'number' ? [a.slot] : []))));
        } else {
          set.identity = `${set.identity ?? alert.identity}.${alert._id.toHexString()}`;
        }
      }
    }
  }
  return wanted.length;
}

function nextFree(taken: ReadonlySet<number>): number {
  let slot = 0;
  while (taken.has(slot)) slot++;
  return slot;
}
