import type { Connection, Types } from 'mongoose';
import type { Config } from '../../config/env.js';
import type { Country } from '../catalog/identifiers.js';
import { productModel } from '../models/product.js';
import { dueFilterOf } from './claims.js';
import { objectiveOf, refreshIndex } from './refresh-objective.js';

export interface DueProduct {
  _id: Types.ObjectId;
  asin: string;
  priority: 0 | 1 | null;
  next_refresh_at: Date | null;
  last_attempt_at: Date | null;
  change_rate: number | null;
}

const FIELDS = { asin: 1, priority: 1, next_refresh_at: 1, last_attempt_at: 1, change_rate: 1 } as const;

/**
 * Candidates read per product the pass can take, under adaptive scheduling: enough that the
 * fastest-changing due products and the most overdue ones are both weighed, few enough that a
 * pass reads a bounded number of keys whatever the backlog.
 */
const WINDOW_PER_SLOT = 3;
const WINDOW_MIN = 100;
// Each window is one command: at most a planning step's 1,000 documents.
const WINDOW_MAX = 1_000;
/**
 * Under adaptive scheduling, the share of priority 0's room that goes to the most overdue products
 * whatever they are worth: when more is due than the quota allows, ranking by worth alone would
 * leave the products that rarely move waiting without end.
 */
export const OVERDUE_SHARE = 0.2;

/**
 * Up to `n` due products of a country in the order the scheduler should refresh them, priority 1
 * first. Under `fixed` scheduling, the most overdue first (the plan_due index's order). Under
 * `adaptive`, priority 1 keeps that order (its interval is a guarantee), and priority 0 is ranked by
 * what a refresh is worth now for REFRESH_OBJECTIVE (src/scheduling/refresh-objective.ts), among two
 * bounded windows of the due products: the fastest-changing (plan_rate) and the most overdue
 * (plan_due), except for OVERDUE_SHARE of the room, which goes to the most overdue. A product never
 * refreshed yet is worth the most: nothing is known of it.
 */
export async function pickDue(
  mongo: Connection,
  config: Pick<Config, 'refresh'>,
  country: Country,
  n: number,
  now: Date,
): Promise<DueProduct[]> {
  if (n <= 0) return [];
  const products = productModel(mongo);
  const due = dueFilterOf(country, now);
  if (config.refresh.scheduling === 'fixed') {
    return products.find(due).sort({ priority: -1, next_refresh_at: 1 }).limit(n).select(FIELDS).lean<DueProduct[]>();
  }
  const p1 = await products
    .find({ ...due, priority: 1 })
    .sort({ priority: -1, next_refresh_at: 1 })
    .limit(n)
    .select(FIELDS)
    .lean<DueProduct[]>();
  const room = n - p1.length;
  if (room === 0) return p1;
  const window = Math.min(WINDOW_MAX, Math.max(WINDOW_MIN, room * WINDOW_PER_SLOT));
  const p0 = { ...due, priority: 0 as const };
  const [fastest, oldest] = await Promise.all([
    products.find(p0).sort({ priority: -1, change_rate: -1 }).hint('plan_rate').limit(window).select(FIELDS).lean<DueProduct[]>(),
    products.find(p0).sort({ priority: -1, next_refresh_at: 1 }).hint('plan_due').limit(window).select(FIELDS).lean<DueProduct[]>(),
  ]);
  const reserved = oldest.slice(0, Math.floor(room * OVERDUE_SHARE));
  const seen = new Set<string>(reserved.map((p) => String(p._id)));
  const candidates = [...fastest, ...oldest].filter((p) => {
    const id = String(p._id);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
  const t = now.getTime();
  const objective = objectiveOf(config);
  const worth = (p: DueProduct): number =>
    refreshIndex(objective, p.change_rate, p.last_attempt_at && t - p.last_attempt_at.getTime(), config.refresh.intervalMs[0]);
  const ranked = candidates
    .map((p) => ({ p, v: worth(p) }))
    .sort(
      (a, b) =>
        b.v - a.v ||
        (b.p.change_rate ?? 0) - (a.p.change_rate ?? 0) ||
        (a.p.next_refresh_at?.getTime() ?? 0) - (b.p.next_refresh_at?.getTime() ?? 0),
    );
  return [...p1, ...ranked.slice(0, room - reserved.length).map((r) => r.p), ...reserved];
}
