import type { Country } from '../core/identifiers.js';
import { UpstreamRateLimitedError } from '../core/errors.js';
import type { UpstreamPort } from '../upstream/port.js';
import type { QuotaGovernor } from './governor.js';

/** Tries of one call the upstream answers 429 for its per-second quota, before the job backs off. */
const THROTTLED_TRIES = 3;

/**
 * The upstream names the exhausted quota in `quotaCode`. Amazon documents no values for it, so any
 * code that speaks of a day is taken as the daily quota; anything else is the second's.
 */
export function isDailyQuota(err: UpstreamRateLimitedError): boolean {
  return /day|daily|tpd/i.test(err.quotaCode ?? '');
}

/**
 * The port of one country whose calls already take the governor's permits (through the client's
 * beforeSend), with the upstream's own 429s fed back to the governor: a daily one marks the day
 * spent for every process and fails as DayQuotaSpentError; a per-second one holds the country's pace
 * for one interval (about 1/Q, not the whole second a Retry-After header can express) and tries
 * again, since the permit was spent for nothing.
 */
export function governPort(port: UpstreamPort, governor: QuotaGovernor, country: Country): UpstreamPort {
  async function call<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!(err instanceof UpstreamRateLimitedError)) throw err;
        if (isDailyQuota(err)) throw await governor.markDaySpent(country);
        await governor.hold(country, Math.min(err.retryAfterMs, governor.intervalMs(country)));
        if (attempt >= THROTTLED_TRIES) throw err;
      }
    }
  }
  return {
    country,
    getItems: (asins) => call(() => port.getItems(asins)),
    findByCode: (ean, page) => call(() => port.findByCode(ean, page)),
    browseNode: (nodeId, page) => call(() => port.browseNode(nodeId, page)),
    getBrowseNodes: (ids) => call(() => port.getBrowseNodes(ids)),
    close: () => port.close(),
  };
}
