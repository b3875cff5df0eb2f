import type { Metrics } from '../core/metrics.js';
import type { DroppedMember, UpstreamPort } from './port.js';
import {
  UpstreamAuthError,
  UpstreamConfigError,
  UpstreamInvalidRequestError,
  UpstreamNotEligibleError,
  UpstreamRateLimitedError,
} from '../core/errors.js';

function resultOf(err: unknown): string {
  if (err instanceof UpstreamRateLimitedError) return 'throttled';
  if (err instanceof UpstreamNotEligibleError) return 'not_eligible';
  if (err instanceof UpstreamConfigError) return 'config';
  if (err instanceof UpstreamAuthError) return 'auth';
  if (err instanceof UpstreamInvalidRequestError) return 'invalid';
  return 'unavailable';
}

/**
 * The port with metrics around every call, so that every adapter is measured the same way and none
 * of them knows about Prometheus. (The day's count of calls is the quota governor's: it counts the
 * permits, one per request on the wire.)
 */
export function instrumentPort(port: UpstreamPort, metrics: Metrics): UpstreamPort {
  const country = port.country;
  const dropped = metrics.upstreamDropped;
  async function measure<T extends { readonly dropped?: readonly DroppedMember[] }>(
    operation: string,
    call: () => Promise<T>,
    items?: (r: T) => Record<string, string>,
  ): Promise<T> {
    const end = metrics.upstreamLatency.startTimer({ country, operation });
    try {
      const result = await call();
      metrics.upstreamCalls.inc({ country, operation, result: 'ok' });
      if (items) for (const outcome of Object.values(items(result))) metrics.upstreamItems.inc({ country, outcome });
      for (const d of result.dropped ?? []) dropped.inc({ country, operation, member: d.member, reason: d.reason });
      return result;
    } catch (err) {
      // Refused before sending (a bad batch) is no call at all.
      if (!(err instanceof UpstreamInvalidRequestError && (err as { sent?: boolean }).sent === false)) {
        metrics.upstreamCalls.inc({ country, operation, result: resultOf(err) });
      }
      throw err;
    } finally {
      end();
    }
  }
  return {
    country,
    getItems: (asins) =>
      measure(
        'getItems',
        () => port.getItems(asins),
        (r) => r.outcomes,
      ),
    findByCode: (ean, page) => measure('searchItems', () => port.findByCode(ean, page)),
    browseNode: (nodeId, page) => measure('browseNode', () => port.browseNode(nodeId, page)),
    getBrowseNodes: (ids) => measure('getBrowseNodes', () => port.getBrowseNodes(ids)),
    close: () => port.close(),
  };
}
