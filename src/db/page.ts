import type { Model, QueryFilter } from 'mongoose';

export interface PageRequest {
  readonly page: number;
  readonly limit: number;
}

export interface Page<T> {
  readonly items: T[];
  readonly total: number;
}

/** One page of a collection's matches in `sort` order, and how many match, in two queries run together. */
export async function findPage<T>(
  model: Model<T>,
  filter: QueryFilter<T>,
  sort: Record<string, 1 | -1>,
  req: PageRequest,
): Promise<Page<T>> {
  const [total, items] = await Promise.all([
    model.countDocuments(filter),
    model
      .find(filter)
      .sort(sort)
      .skip((req.page - 1) * req.limit)
      .limit(req.limit)
      .lean<T[]>(),
  ]);
  return { items, total };
}
