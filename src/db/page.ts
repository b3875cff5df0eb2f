import type { Model, QueryFilter } from 'mongoose';
import { ValidationError } from '../core/errors.js';
import { LIST_QUERY_MAX_MS } from './mongo.js';

export interface PageRequest {
  readonly page: number;
  readonly limit: number;
}

export interface Page<T> {
  readonly items: T[];
  readonly total: number;
}

/**
 * The deepest page served inside a list. A page skips (page − 1) × limit entries, each walked by the
 * server, so 10,000 pages of 100 (999,900 entries) is the most one request may cost; deeper data is
 * reached by narrowing the list (`q`, `search`, `since`). A page past the end costs nothing and is
 * never refused.
 */
export const MAX_PAGE = 10_000;

/**
 * Where a page starts in a list of `total` entries: null past the end (an empty page with its
 * envelope, as Laravel's paginator answers, and no query for data); a 422 on `page` for a page
 * inside the list deeper than MAX_PAGE.
 */
export function offsetIn(req: PageRequest, total: number): number | null {
  const offset = (req.page - 1) * req.limit;
  if (offset >= total) return null;
  if (req.page > MAX_PAGE) throw new ValidationError({ page: [`The page field must not be greater than ${MAX_PAGE}.`] });
  return offset;
}

/**
 * One page of a collection's matches in `sort` order, and how many match. The first page runs both
 * queries together; a later one counts first, so a page past the end reads no data.
 */
export async function findPage<T>(
  model: Model<T>,
  filter: QueryFilter<T>,
  sort: Record<string, 1 | -1>,
  req: PageRequest,
): Promise<Page<T>> {
  const fetch = (offset: number): Promise<T[]> =>
    model.find(filter).sort(sort).skip(offset).limit(req.limit).maxTimeMS(LIST_QUERY_MAX_MS).lean<T[]>().exec();
  const count = (): Promise<number> => model.countDocuments(filter).maxTimeMS(LIST_QUERY_MAX_MS).exec();
  if (req.page === 1) {
    const [total, items] = await Promise.all([count(), fetch(0)]);
    return { items, total };
  }
  const total = await count();
  const offset = offsetIn(req, total);
  return { items: offset === null ? [] : await fetch(offset), total };
}
