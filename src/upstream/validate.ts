/**
 * Local checks run before a request is sent: a call that the upstream would refuse still spends
 * quota, so we refuse it here first.
 */
import { browseNodeSchema, isValidEan13 } from '../core/identifiers.js';
import { UpstreamInvalidRequestError } from '../core/errors.js';
import { asinBatchSchema, MAX_ITEMS_PER_CALL, MAX_PAGE } from './port.js';

/** Upper-cased, checked ASINs (asinBatchSchema). */
export function checkAsinBatch(asins: readonly string[]): string[] {
  const parsed = asinBatchSchema.safeParse(asins.map((a) => (typeof a === 'string' ? a.toUpperCase() : a)));
  if (!parsed.success) {
    throw new UpstreamInvalidRequestError(
      `getItems: the ASINs ${parsed.error.issues[0]?.message ?? 'are invalid.'} Got ${JSON.stringify(asins).slice(0, 200)}`,
      'FieldValidationFailed',
    );
  }
  return parsed.data;
}

/** An EAN-13 with a valid check digit; a 12-digit UPC becomes its EAN-13 form (leading 0). */
export function checkEan(raw: string): string {
  const code = typeof raw === 'string' && /^\d{12}$/.test(raw) ? `0${raw}` : raw;
  if (typeof code !== 'string' || !isValidEan13(code)) {
    throw new UpstreamInvalidRequestError(
      `invalid EAN ${JSON.stringify(raw)}: must be 13 digits (or a 12-digit UPC) with a valid check digit`,
      'FieldValidationFailed',
    );
  }
  return code;
}

export function checkBrowseNodeId(raw: string): string {
  const parsed = browseNodeSchema.safeParse(raw);
  if (!parsed.success)
    throw new UpstreamInvalidRequestError(`invalid browse node id ${JSON.stringify(raw)}: digits only`, 'FieldValidationFailed');
  return parsed.data;
}

export function checkPage(page: number): number {
  if (!Number.isInteger(page) || page < 1 || page > MAX_PAGE) {
    throw new UpstreamInvalidRequestError(`page must be a whole number from 1 to ${MAX_PAGE}, got ${page}`, 'FieldValidationFailed');
  }
  return page;
}

export function checkBrowseNodeIds(ids: readonly string[]): string[] {
  if (ids.length === 0 || ids.length > MAX_ITEMS_PER_CALL) {
    throw new UpstreamInvalidRequestError(
      `getBrowseNodes takes 1 to ${MAX_ITEMS_PER_CALL} ids, got ${ids.length}`,
      'FieldValidationFailed',
    );
  }
  const out = ids.map(checkBrowseNodeId);
  if (new Set(out).size !== out.length)
    throw new UpstreamInvalidRequestError('duplicate browse node id in one call', 'FieldValidationFailed');
  return out;
}
