/**
 * The accounts of bench:tenants and what they watch, written straight into MongoDB (as lib/seed.ts
 * does for the other benchmarks): a thousand watched products through the API would measure the
 * API, not how the accounts share the quota. Alerts, browse watches and imports go through the
 * API instead (lib/account-api-client.ts), since their endpoints, secrets and jobs are the product's.
 */
import type { Connection, Types } from 'mongoose';
import { UserService } from '../../src/users/service.js';
import { asinOf, insertChunks, productDoc, watchDoc } from './seed.js';

export interface Account {
  readonly id: Types.ObjectId;
  readonly hex: string;
  readonly email: string;
  readonly token: string;
}

/** Creates the accounts, in order; emails are `<name>@tenants.bench.example.com`. */
export async function createAccounts(conn: Connection, appKey: Buffer, names: readonly string[]): Promise<Account[]> {
  const users = new UserService(conn, appKey);
  const out: Account[] = [];
  for (const name of names) {
    const email = `${name}@tenants.bench.example.com`;
    const { user, token } = await users.create({ name, email });
    out.push({ id: user._id, hex: user._id.toHexString(), email, token });
  }
  return out;
}

/** Where a light account's ASINs start in asinOf's sequence, and the heavy account's (far apart, so no ASIN is shared). */
const LIGHT_BASE = 0;
const HEAVY_BASE = 1_000_000;

/** A light account's `perAccount` ASINs, its own (the run watches the first --light-p1 of them at priority 1). */
export function lightAsins(index: number, perAccount: number): string[] {
  return Array.from({ length: perAccount }, (_, j) => asinOf(LIGHT_BASE + index * perAccount + j));
}

export function heavyAsins(n: number): string[] {
  return Array.from({ length: n }, (_, i) => asinOf(HEAVY_BASE + i));
}

/** A valid EAN-13 (the simulator resolves every one): a JAN prefix, `n` in ten digits, the check digit. */
export function eanOf(n: number): string {
  const body = `45${String(n).padStart(10, '0')}`;
  let sum = 0;
  for (let i = 0; i < 12; i++) sum += Number(body[i]) * (i % 2 === 0 ? 1 : 3);
  return `${body}${(10 - (sum % 10)) % 10}`;
}

/** `count` EANs of their own for the account at `slot` (0: the heavy one, then the light ones). */
export function eansFor(slot: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => eanOf(slot * 100_000 + i));
}

export interface WatchSeed {
  readonly owner: Types.ObjectId;
  readonly asins: readonly string[];
  readonly priorityOf: (i: number) => 0 | 1;
}

/** A low-discrepancy point in [0, 1) for the i-th product: neighbours (one account's ASINs) land far apart. */
function spread(i: number): number {
  return (i * 0.618_033_988_75) % 1;
}

/**
 * Watch entries and their products in every country, owned by their watcher (as applyWatchChange
 * would make them), not yet scheduled: the setup that follows (alerts through the api) takes a
 * while, and products due meanwhile would all be overdue in one wave when the scheduler starts.
 */
export async function seedWatches(conn: Connection, countries: readonly string[], seeds: readonly WatchSeed[], at: Date): Promise<number> {
  const rows = seeds.flatMap((s) => s.asins.map((asin, i) => ({ owner: s.owner, asin, priority: s.priorityOf(i) })));
  await insertChunks(conn, 'watches', rows.length, (i) => watchDoc(rows[i]!.owner, rows[i]!.asin, rows[i]!.priority, at));
  for (const country of countries) {
    await insertChunks(conn, 'products', rows.length, (i) => ({
      ...productDoc({ country, asin: rows[i]!.asin, priority: rows[i]!.priority, nextRefreshAt: null, createdAt: at }),
      // Fields the product schema has beyond lib/seed.ts's document: the planner reads them.
      buybox: null,
      history_at: null,
      change_rate: null,
      rate_obs: [],
      owners: [rows[i]!.owner],
    }));
  }
  return rows.length;
}

/**
 * Schedules the seeded products' first refreshes, spread over `spreadMs` from `from`, so the light
 * accounts' refreshes do not march in one wave for the whole run.
 */
export async function scheduleFirstRefreshes(
  conn: Connection,
  countries: readonly string[],
  asins: readonly string[],
  from: Date,
  spreadMs: number,
): Promise<void> {
  const products = conn.db!.collection('products');
  const ops = countries.flatMap((country) =>
    asins.map((asin, i) => ({
      updateOne: {
        filter: { country, asin },
        update: { $set: { next_refresh_at: new Date(from.getTime() + Math.floor(spread(i) * spreadMs)) } },
      },
    })),
  );
  for (let i = 0; i < ops.length; i += 2_000) await products.bulkWrite(ops.slice(i, i + 2_000), { ordered: false });
}
