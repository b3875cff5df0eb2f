export type { BrowseNodeInfo, BrowseNodePage, FindByCodeResult, GetItemsResult, UpstreamPort } from './port.js';
export { MAX_ITEMS_PER_CALL, MAX_PAGE } from './port.js';
export {
  UpstreamAuthError,
  UpstreamInvalidRequestError,
  UpstreamNotEligibleError,
  UpstreamRateLimitedError,
  UpstreamUnavailableError,
} from '../core/errors.js';
export { createUpstream, createUpstreamShared, type CreateUpstreamOptions, type UpstreamShared } from './factory.js';
