import pLimit from 'p-limit';
import { evalScript, type Redis } from '../db/redis.js';
import { sharedTag } from '../db/redis-keys.js';

/**
 * Start-time fair queuing (Goyal, Vin & Cheng, SIGCOMM 1996) between accounts, on open-source
 * BullMQ: each job gets a start tag S = max(V, F_account), and the account's finish tag moves to
 * S + 1/weight; V is the largest tag of a job started so far. A queue that serves the smallest tag
 * first gives every backlogged account its weight's share of the workers, and an account that was
 * idle starts at V, ahead of every job another account queued beyond its share. BullMQ serves a
 * queue by job priority (lower first, FIFO among equals), so the tag goes in as the priority.
 *
 * The priority is the tag less the lane's base: the order between any two queued jobs is their
 * tags' order, whenever each was queued. BullMQ's priorities stop at 2^21 while tags grow for ever,
 * so when a tag runs past ROLL_AT above the base, the base moves up to V and every job still
 * queued in the lane's queue moves down by as much (a bounded pass, once every million tags).
 *
 * Several processes share a lane's V, base and its accounts' finish tags through Redis, so the
 * order holds across every producer and worker. An account's finish tag expires a day after its
 * last job: by then V has long passed it, and an expired tag reads as V.
 */

/** BullMQ's lowest priority. */
export const MAX_PRIORITY = 2_097_152;

/** How far above the base a priority may go before the base moves up (half of BullMQ's range). */
const ROLL_AT = 1_000_000;

/** How long an account's finish tag outlives its last job (ms). */
const FINISH_TTL_MS = 86_400_000;

/** Queued jobs moved at once while the base moves. */
const MOVES_AT_ONCE = 16;

/**
 * KEYS: 1 the lane's V, 2 the account's finish tag, 3 the lane's base. ARGV: 1 the job's cost
 * (1/weight), 2 the tag's TTL ms. Returns {S, the priority S gives over the base, '1' when the
 * account had nothing queued beyond V}, as strings so fractions survive.
 */
const TAG = `
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local f = tonumber(redis.call('GET', KEYS[2]) or '0')
local base = tonumber(redis.call('GET', KEYS[3]) or '0')
local s = math.max(v, f)
redis.call('SET', KEYS[2], string.format('%.6f', s + tonumber(ARGV[1])), 'PX', ARGV[2])
local fresh = '0'
if f <= v then fresh = '1' end
return {string.format('%.6f', s), tostring(math.floor(s - base + 1e-9) + 1), fresh}
`;

/** KEYS: 1 the lane's V. ARGV: 1 a started job's tag. V only moves forward. */
const STARTED = `
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > v then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
`;

/**
 * A lane's queue, as moving its base reorders it: its waiting jobs by priority, a page at a time
 * (a BullMQ queue is one).
 */
export interface FairQueue {
  getJobs(
    states: ['prioritized'],
    start: number,
    end: number,
    asc: boolean,
  ): Promise<{ readonly priority: number; changePriority(opts: { priority: number }): Promise<void> }[]>;
}

/** What a fairly queued job carries: who it is for and its start tag. */
export interface FairTag {
  readonly account: string;
  readonly tag: number;
}

export interface TaggedJob extends FairTag {
  /** BullMQ's priority for the job: its tag over the lane's base, plus one. */
  readonly priority: number;
  /** The account had nothing queued in the lane beyond V: its job starts a new turn (S = V). */
  readonly fresh: boolean;
}

/** Fair tags of the lanes of one key prefix. A lane is one queue's jobs that share out its workers (e.g. `import:JP`). */
export class FairTags {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly rollAt = ROLL_AT,
  ) {}

  #key(lane: string, what: string): string {
    return `${sharedTag(this.prefix, `fair:${lane}`)}:${what}`;
  }

  /**
   * The tag and priority of the next job of `account` in `lane`, whose jobs wait in `queue`;
   * `weight` is the account's share (default 1).
   */
  async tag(lane: string, account: string, weight: number, queue: FairQueue): Promise<TaggedJob> {
    const cost = 1 / Math.max(1e-3, weight);
    const [s, p, fresh] = (await evalScript(
      this.redis,
      TAG,
      3,
      this.#key(lane, 'v'),
      this.#key(lane, `f:${account}`),
      this.#key(lane, 'base'),
      String(cost),
      String(FINISH_TTL_MS),
    )) as [string, string, string];
    const tag = Number(s);
    let priority = Number(p);
    if (priority > this.rollAt) {
      await this.#moveBase(lane, queue);
      priority = tag - Number((await this.redis.get(this.#key(lane, 'base'))) ?? 0) + 1;
    }
    return { account, tag, fresh: fresh === '1', priority: Math.min(MAX_PRIORITY, Math.max(1, Math.floor(priority + 1e-9))) };
  }

  /** A job of the lane started: V moves to its tag, so accounts that were idle start there. */
  async started(lane: string, tag: number): Promise<void> {
    await evalScript(this.redis, STARTED, 1, this.#key(lane, 'v'), tag.toFixed(6));
  }

  /**
   * Moves the lane's base up to V, and every job waiting in `queue` down by as much, so the order
   * between them holds. One process at a time (a lock); another meanwhile queues its job at the
   * priority it got, capped at BullMQ's lowest, which costs that job its place only until the move.
   * Delayed jobs (a retry's backoff) keep theirs: they come back a little later in the order.
   */
  async #moveBase(lane: string, queue: FairQueue): Promise<void> {
    const lock = this.#key(lane, 'moving');
    if ((await this.redis.set(lock, '1', 'PX', 60_000, 'NX')) === null) return;
    try {
      const [v, old] = await this.redis.mget(this.#key(lane, 'v'), this.#key(lane, 'base'));
      const base = Math.floor(Number(v ?? 0));
      const delta = base - Number(old ?? 0);
      if (delta <= 0) return;
      await this.redis.set(this.#key(lane, 'base'), String(base));
      const limit = pLimit(MOVES_AT_ONCE);
      for (let start = 0; ; start += 500) {
        const jobs = await queue.getJobs(['prioritized'], start, start + 499, true);
        await Promise.all(
          jobs
            .filter((j) => j.priority > 0)
            .map((j) => limit(() => j.changePriority({ priority: Math.max(1, j.priority - delta) }).catch(() => undefined))),
        );
        if (jobs.length < 500) break;
      }
    } finally {
      await this.redis.del(lock);
    }
  }
}
