import type { Connection, Types } from 'mongoose';
import type { Config } from '../../config/env.js';
import type { Country } from '../core/identifiers.js';
import { productModel } from '../models/product.js';
import { dueFilterOf } from './claims.js';
import { refreshIndex, type RefreshPolicy } from './refresh-objective.js';

export interface DueProduct {
  _id: Types.ObjectId;
  asin: string;
  priority: 0 | 1 | null;
  next_refresh_at: Date | null;
  last_attempt_at: Date | null;
  change_rate: number | null;
  sched_rate?: number | null;
}

const FIELDS = { asin: 1, priority: 1, next_refresh_at: 1, last_attempt_at: 1, change_rate: 1, sched_rate: 1 } as const;

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
 * A wait of this share of priority 0's interval goes first, whatever the product is worth: the
 * rest of the interval is the room that absorbs a burst of products coming due together (those
 * first seen together, at a cold start), so none waits past the interval itself.
 */
export const LATE_SHARE = 0.9;

/** Before a country's policy is tuned, due products are ranked by changes seen (w = 0). */
const UNTUNED: Pick<RefreshPolicy, 'weight' | 'evenHours'> = { weight: 0, evenHours: 1 };

/** The bounded windows of due priority-0 products a pass weighs (see pickDue). */
export interface P0Windows {
  /** The fastest-changing first (plan_rate). */
  readonly fastest: readonly DueProduct[];
  /** The most overdue first (plan_due). */
  readonly oldest: readonly DueProduct[];
  /** Seen longest ago first (plan_stale). */
  readonly stale: readonly DueProduct[];
}

/** Candidates read per product the pass can take: enough to weigh both ends, few enough to bound a pass. */
export function windowSize(room: number): number {
  return Math.min(WINDOW_MAX, Math.max(WINDOW_MIN, room * WINDOW_PER_SLOT));
}

/**
 * Up to `room` of the windows' products, in the order to refresh them: first those whose wait has
 * reached LATE_SHARE of priority 0's interval (a guarantee, whatever they are worth), most overdue first; then by
 * the policy's index now (src/scheduling/refresh-objective.ts), a product never refreshed first.
 */
export function chooseP0(
  windows: P0Windows,
  room: number,
  policy: Pick<RefreshPolicy, 'weight' | 'evenHours'> | null,
  maxMs: number,
  now: Date,
): DueProduct[] {
  const t = now.getTime();
  const late = windows.stale
    .filter((p) => p.last_attempt_at !== null && t - p.last_attempt_at.getTime() >= LATE_SHARE * maxMs)
    .slice(0, room);
  const seen = new Set<string>(late.map((p) => p.asin));
  const candidates = [...windows.fastest, ...windows.oldest, ...windows.stale].filter((p) => {
    if (seen.has(p.asin)) return false;
    seen.add(p.asin);
    return true;
  });
  const ranking = policy ?? UNTUNED;
  const ranked = candidates
    .map((p) => ({ p, v: refreshIndex(ranking, p.sched_rate ?? p.change_rate, p.last_attempt_at && t - p.last_attempt_at.getTime()) }))
    .sort(
      (a, b) =>
        b.v - a.v ||
        (b.p.change_rate ?? 0) - (a.p.change_rate ?? 0) ||
        (a.p.next_refresh_at?.getTime() ?? 0) - (b.p.next_refresh_at?.getTime() ?? 0),
    );
  return [...late, ...ranked.slice(0, room - late.length).map((r) => r.p)];
}

/**
 * Up to `n` due products of a country in the order the scheduler should refresh them, priority 1
 * first. Under `fixed` scheduling, the most overdue first (the plan_due index's order). Under
 * `adaptive`, priority 1 keeps that order (its interval is a guarantee), and priority 0 is chosen by
 * chooseP0 among three bounded windows of the due products: the fastest-changing (plan_rate), the
 * most overdue (plan_due) and those seen longest ago (plan_stale), ranked by the country's tuned policy (`policy`; null before one is tuned).
 */
export async function pickDue(
  mongo: Connection,
  config: Pick<Config, 'refresh'>,
  country: Country,
  n: number,
  now: Date,
  policy: Pick<RefreshPolicy, 'weight' | 'evenHours'> | null = null,
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
  const window = windowSize(room);
  const p0 = { ...due, priority: 0 as const };
  const [fastest, oldest, stale] = await Promise.all([
    products.find(p0).sort({ priority: -1, change_rate: -1 }).hint('plan_rate').limit(window).select(FIELDS).lean<DueProduct[]>(),
    products.find(p0).sort({ priority: -1, next_refresh_at: 1 }).hint('plan_due').limit(window).select(FIELDS).lean<DueProduct[]>(),
    products.find(p0).sort({ priority: -1, last_attempt_at: 1 }).hint('plan_stale').limit(window).select(FIELDS).lean<DueProduct[]>(),
  ]);
  return [...p1, ...chooseP0({ fastest, oldest, stale }, room, policy, config.refresh.intervalMs[0], now)];
}
