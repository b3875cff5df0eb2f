import type { Country } from '../core/identifiers.js';
import { UpstreamCountryError, UpstreamRateLimitedError } from '../core/errors.js';
import type { UpstreamPort } from '../upstream/port.js';
import type { BeforeSend } from '../upstream/creators/sent-at.js';
import type { Permit, QuotaGovernor } from './governor.js';
import type { PermitScope, PermitScopes } from './permit-scope.js';
import { kindOf, type CountryBreakers, type ProbeCall } from './breaker.js';
import { slowedWellUnderQ, soonAfterSlotMs } from './pace-margin.js';

/** Tries of one call the upstream answers 429 for its per-second quota, before the job backs off. */
const THROTTLED_TRIES = 3;
/** Calls of an unbroken run of 429s before it may open the breaker, however long the run. */
const RUN_CALLS = 3;

/**
 * The upstream names the exhausted quota in `quotaCode`. Amazon documents no values for it, so any
 * code that speaks of a day is taken as the daily quota; anything else is the second's.
 */
export function isDailyQuota(err: UpstreamRateLimitedError): boolean {
  return /day|daily|tpd/i.test(err.quotaCode ?? '');
}

export interface GovernPortDeps {
  readonly governor: QuotaGovernor;
  readonly breakers: CountryBreakers;
  /** The permit scope of the job making the call (when it runs in one): when its call left, and its retry. */
  readonly scopes?: PermitScopes;
}

/**
 * The port of one country whose calls already take the governor's permits (through the client's
 * beforeSend), with the upstream's refusals fed back:
 * - a daily 429 marks the day spent for every process and fails as DayQuotaSpentError;
 * - a per-second 429 holds the country's pace for what Retry-After says (one interval, 1/Q, when it
 *   says nothing) and the call is tried again with its batch, at the next start, ahead of the line
 *   (its permit was spent for nothing); one that came soon after its slot grows the margin the
 *   pace keeps (pace-margin.ts), and when every call of the country has been answered 429 for the
 *   breaker's window although the pace slowed well under Q, the country's breaker opens;
 * - a credential, eligibility or configuration error opens the breaker at once.
 * While the breaker is open every call fails as UpstreamRefusingError (its job waits, spending no
 * attempt); the probe's call, which tries once, is the exception.
 */
export function governPort(port: UpstreamPort, country: Country, deps: GovernPortDeps): UpstreamPort {
  const { governor, breakers, scopes } = deps;
  async function call<T>(probe: ProbeCall, fn: () => Promise<T>): Promise<T> {
    const scope = scopes?.getStore();
    for (let attempt = 1; ; attempt++) {
      try {
        const out = await fn();
        governor.paceWentThrough(country);
        return out;
      } catch (err) {
        if (scope?.probe) throw err;
        if (err instanceof UpstreamCountryError) throw await breakers.open(country, kindOf(err), err.reason, probe);
        if (!(err instanceof UpstreamRateLimitedError)) throw err;
        if (isDailyQuota(err)) throw await governor.markDaySpent(country);
        const interval = governor.intervalMs(country);
        const sentAt = scope?.state.sentAt;
        if (sentAt !== undefined && performance.now() - sentAt <= soonAfterSlotMs(interval)) {
          const pace = await governor.paceThrottled(country);
          if (
            pace.runCalls >= RUN_CALLS &&
            pace.runMs >= breakers.options.windowMs &&
            slowedWellUnderQ(pace.marginMs, interval, pace.runCalls, pace.runMs)
          ) {
            throw await breakers.open(country, 'throttled', err.quotaCode ?? 'ThrottleException', probe);
          }
        }
        await governor.hold(country, err.retryAfterGiven ? err.retryAfterMs : interval);
        if (attempt >= THROTTLED_TRIES) throw err;
        if (scope) scope.state.retry = true;
      }
    }
  }
  return {
    country,
    getItems: (asins) => call({ op: 'getItems', args: [asins] }, () => port.getItems(asins)),
    findByCode: (ean, page) => call({ op: 'findByCode', args: [ean, page] }, () => port.findByCode(ean, page)),
    browseNode: (nodeId, page) => call({ op: 'browseNode', args: [nodeId, page] }, () => port.browseNode(nodeId, page)),
    getBrowseNodes: (ids) => call({ op: 'getBrowseNodes', args: [ids] }, () => port.getBrowseNodes(ids)),
    close: () => port.close(),
  };
}

/**
 * The upstream client's beforeSend for a country: every HTTP request it sends (a retry after a 401
 * too) first takes the governor's permit in the class and rank of the job it runs in. A call the
 * upstream answered 429 at its slot takes the next start ahead of every other. `onStarted` hears a
 * fairly queued job's first call: only then is it served in fair queuing, not when a worker slot
 * took it (the fair classes' slots hold whole backlogs).
 */
export function permitBeforeSend(
  country: Country,
  governor: Pick<QuotaGovernor, 'permit' | 'sending'>,
  scopes: PermitScopes,
  onStarted: (fair: NonNullable<PermitScope['fair']>) => void,
): BeforeSend {
  return async () => {
    const scope = scopes.getStore();
    if (!scope) throw new Error('an upstream call outside a job has no class to take a permit in');
    scope.state.waiting = true;
    const rank = scope.state.retry ? -1 : scope.rank;
    scope.state.retry = false;
    let permit: Permit;
    try {
      permit = await governor.permit(country, scope.cls, rank, scope.signal, { probe: scope.probe === true });
    } finally {
      scope.state.waiting = false;
    }
    if (scope.fair && !scope.state.started) onStarted(scope.fair);
    scope.state.started = true;
    // The call reaches the upstream when its headers go out, after any wait for a connection:
    // that, not this moment, is what the next start must keep its interval from (and what a 429,
    // which only a call that went can get, is measured from).
    return () => {
      scope.state.sentAt = performance.now();
      void governor.sending(country, permit);
    };
  };
}
