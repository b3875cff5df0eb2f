import type { Redis } from '../db/redis.js';

/**
 * Start-time fair queuing (Goyal, Vin & Cheng, SIGCOMM 1996) between accounts, on open-source
 * BullMQ: each job gets a start tag S = max(V, F_account), and the account's finish tag moves to
 * S + 1/weight; V is the largest tag of a job started so far. A queue that serves the smallest tag
 * first gives every backlogged account its weight's share of the workers, and an account that was
 * idle starts at V, ahead of every job another account queued beyond its share. BullMQ serves a
 * queue by job priority (lower first, FIFO among equals), so the tag goes in as the priority, taken
 * relative to V at enqueue time: BullMQ's priorities stop at 2^21, and tags grow for ever.
 *
 * Several processes share a lane's V and its accounts' finish tags through Redis, so the order holds
 * across every producer and worker. An account's finish tag expires a day after its last job: by
 * then V has long passed it, and an expired tag reads as V.
 */

/** BullMQ's lowest priority. */
export const MAX_PRIORITY = 2_097_152;

/** How long an account's finish tag outlives its last job (ms). */
const FINISH_TTL_MS = 86_400_000;

/**
 * KEYS: 1 the lane's V, 2 the account's finish tag. ARGV: 1 the job's cost (1/weight), 2 the tag's TTL ms.
 * Returns {S, S − V}, as strings so fractions survive.
 */
const TAG = `
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
local s = math.max(v, f)
redis.call('SET', KEYS[2], string.format('%.6f', s + tonumber(ARGV[1])), 'PX', ARGV[2])
return {string.format('%.6f', s), string.format('%.6f', s - v)}
`;

/** KEYS: 1 the lane's V. ARGV: 1 a started job's tag. V only moves forward. */
const STARTED = `
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > v then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
`;

/** What a fairly queued job carries: who it is for and its start tag. */
export interface FairTag {
  readonly account: string;
  readonly tag: number;
}

export interface TaggedJob extends FairTag {
  /** BullMQ's priority for the job: 1 + how far its tag is beyond the lane's V, in jobs of weight 1. */
  readonly priority: number;
}

/** Fair tags of the lanes of one key prefix. A lane is one queue's jobs that share out workers (e.g. `import:JP`). */
export class FairTags {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  #v(lane: string): string {
    return `${this.prefix}:fair:${lane}:v`;
  }

  /** The tag and priority of the next job of `account` in `lane`; `weight` is the account's share (default 1). */
  async tag(lane: string, account: string, weight = 1): Promise<TaggedJob> {
    const cost = 1 / Math.max(1e-3, weight);
    const [s, ahead] = (await this.redis.eval(
      TAG,
      2,
      this.#v(lane),
      `${this.prefix}:fair:${lane}:f:${account}`,
      String(cost),
      String(FINISH_TTL_MS),
    )) as [string, string];
    return { account, tag: Number(s), priority: priorityOf(Number(ahead)) };
  }

  /** A job of the lane started: V moves to its tag, so accounts that were idle start there. */
  async started(lane: string, tag: number): Promise<void> {
    await this.redis.eval(STARTED, 1, this.#v(lane), tag.toFixed(6));
  }
}

/** BullMQ's priority for a tag `ahead` of V: 1 at V, one more per job of weight 1, capped at BullMQ's lowest. */
export function priorityOf(ahead: number): number {
  return Math.min(MAX_PRIORITY, 1 + Math.max(0, Math.floor(ahead + 1e-9)));
}
