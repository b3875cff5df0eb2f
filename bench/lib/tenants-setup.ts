/**
 * What bench:tenants' accounts set up through the api before the clock starts: each light
 * account's one healthy alert, and the heavy account's thousand alerts to the failing receiver and
 * its browse watches. These go through the routes, so endpoints, secrets and caps are the
 * product's own.
 */
import type { Account } from './tenants-seed.js';
import { forEachLimit, postOk } from './account-api-client.js';
import { meanChangeIntervalMs } from './upstream-probe.js';

/** Requests of the setup in flight at once: enough to be quick, few enough not to stall the api. */
const SETUP_CONCURRENCY = 8;

export interface LightAlert {
  readonly account: string;
  readonly asin: string;
  readonly country: string;
  readonly endpointId: string;
  /** The simulator's mean interval between the product's changes (ms). */
  readonly meanIntervalMs: number;
}

/**
 * Each light account's alert: `any_change` on the fastest-changing of its priority-1 ASINs that
 * the upstream has (in one country, alternating), to the healthy receiver. The fastest, so that
 * a few minutes hold enough deliveries for a 99th percentile.
 */
export async function createLightAlerts(
  apiUrl: string,
  simUrl: string,
  lights: readonly { account: Account; p1: readonly string[] }[],
  countries: readonly string[],
  okUrl: string,
): Promise<LightAlert[]> {
  const out: LightAlert[] = [];
  await forEachLimit(lights, SETUP_CONCURRENCY, async ({ account, p1 }, i) => {
    const country = countries[i % countries.length]!;
    let best: { asin: string; ms: number } | undefined;
    for (const asin of p1) {
      const ms = await meanChangeIntervalMs(simUrl, country, asin);
      if (ms !== null && (!best || ms < best.ms)) best = { asin, ms };
    }
    if (!best) throw new Error(`none of ${account.email}'s priority-1 ASINs exists upstream in ${country}: raise --light-p1`);
    const answer = await postOk(
      apiUrl,
      account.token,
      '/api/alerts',
      { asin: best.asin, country, kind: 'any_change', webhook_url: okUrl },
      [201],
    );
    const endpointId = (answer.body as { data: { endpoint_id: string } }).data.endpoint_id;
    out.push({ account: account.hex, asin: best.asin, country, endpointId, meanIntervalMs: best.ms });
  });
  return out;
}

/** The heavy account's alerts: `any_change` on each of its watched ASINs, countries alternating, all to the failing receiver. */
export async function createHeavyAlerts(
  apiUrl: string,
  heavy: Account,
  asins: readonly string[],
  countries: readonly string[],
  failUrl: string,
): Promise<void> {
  const create = (asin: string, i: number) =>
    postOk(
      apiUrl,
      heavy.token,
      '/api/alerts',
      { asin, country: countries[i % countries.length]!, kind: 'any_change', webhook_url: failUrl },
      [201],
    );
  // The first alone: the account's alert counter (src/accounts/counters.ts) is seeded by its first
  // reservation, and a reservation that races the seed is refused as if at ACCOUNT_MAX_ALERTS,
  // which would stop the set-up far below the cap.
  await create(asins[0]!, 0);
  await forEachLimit(asins.slice(1), SETUP_CONCURRENCY, async (asin, i) => {
    await create(asin, i + 1);
  });
}

/** Browse node ids of the heavy account: distinct, deep in the simulator's tree (every id exists there). */
export function heavyNodes(n: number): string[] {
  return Array.from({ length: n }, (_, i) => String(7_000_000 + i));
}

export async function watchBrowseNodes(apiUrl: string, heavy: Account, nodes: readonly string[]): Promise<void> {
  await forEachLimit(nodes, SETUP_CONCURRENCY, async (browse) => {
    await postOk(apiUrl, heavy.token, '/api/watch/browse', { browse }, [201]);
  });
}
