import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Country } from '../catalog/identifiers.js';
import type { Metrics } from '../metrics/registry.js';
import type { DailyUsage } from './daily-usage.js';
import { DayQuotaSpentError, GovernorClosedError, type DaySpentReason } from '../errors/index.js';
import { HOLD, SEED_DAY, TAKE_PERMIT } from './governor-scripts.js';
import type { Lane } from './lanes.js';
import { dayLeftFraction, quotaDayOf, type QuotaDay } from './quota-day.js';

export interface GovernedQuota {
  /** Calls a second (Q). */
  readonly perSecond: number;
  /** Calls that may start at once after an idle spell (B); 1 spaces every call by 1/Q. */
  readonly burst: number;
  /** Calls a quota day. */
  readonly perDay: number;
}

export interface GovernorOptions {
  readonly quotas: Readonly<Partial<Record<Country, GovernedQuota>>>;
  /** Time zone whose calendar days the daily quota counts (QUOTA_DAY_TZ). */
  readonly dayTimeZone: string;
  /** Largest share of Q (while scheduled work waits) and of the day that on-demand work may use. */
  readonly onDemandShare: number;
  /** Share of the rest of the day's calls that scheduled work leaves to forced updates. */
  readonly onDemandReserve: number;
  /** The MongoDB copy of the day's count. */
  readonly usage: DailyUsage;
  readonly metrics?: Metrics;
  /**
   * Tests and the simulated-day benchmark: a clock of their own. Without it the pace follows Redis's
   * clock, which every process shares, and the day follows this machine's.
   */
  readonly clock?: () => number;
}

export interface DayStatus {
  readonly country: Country;
  readonly day: QuotaDay;
  readonly limit: number;
  readonly used: number;
  readonly onDemandUsed: number;
  /** What scheduled work may have spent by now: the day less the reserve for forced updates. */
  readonly scheduledLimit: number;
  readonly onDemandLimit: number;
  /** True when the upstream said the day's quota is spent. */
  readonly spent: boolean;
  /** Mean wait for a permit today, every process together (ms). */
  readonly meanWaitMs: number;
}

type Answer =
  | { kind: 'ok'; delay: number; total: number; od: number; start: number }
  | { kind: 'wait'; ms: number; why: 'rate' | 'share' | 'priority' }
  | { kind: 'day'; total: number; od: number; reason: DaySpentReason }
  | { kind: 'seed' };

/** A granted permit. */
export interface Permit {
  /**
   * The start the governor booked, in ms on its clock (Redis's, or the injected one). Every
   * process's booked starts keep the pace exactly; the call itself goes out when this process's
   * timer fires, a millisecond or so either side.
   */
  readonly bookedAt: number;
}

interface Waiter {
  readonly lane: Lane;
  /** BullMQ's job priority: lower goes first. */
  readonly priority: number;
  readonly since: number;
  readonly resolve: (permit: Permit) => void;
  readonly reject: (err: Error) => void;
  readonly signal?: AbortSignal;
  onAbort?: () => void;
}

const DAY_TTL_MS = 3 * 86_400_000;

function parse(raw: unknown): Answer {
  const a = raw as string[];
  switch (a[0]) {
    case 'ok':
      return { kind: 'ok', delay: Number(a[1]), total: Number(a[2]), od: Number(a[3]), start: Number(a[4]) };
    case 'wait':
      return { kind: 'wait', ms: Number(a[1]), why: a[2] === 'share' ? 'share' : a[2] === 'priority' ? 'priority' : 'rate' };
    case 'day':
      return { kind: 'day', total: Number(a[1]), od: Number(a[2]), reason: a[3] as DaySpentReason };
    default:
      return { kind: 'seed' };
  }
}

/**
 * One governor per country, shared by every process through Redis: every upstream catalog call
 * takes a permit right before it goes on the wire (src/quota/governor-scripts.ts holds the pace and
 * the day's count). Within a process, callers wait in line per country, on-demand first, and only
 * the head of the line asks Redis, so a process sends Redis about one request per permit however
 * many jobs wait.
 */
export class QuotaGovernor {
  readonly #lines = new Map<Country, { waiters: Waiter[]; running: boolean; onDemandBlockedUntil: number }>();
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Callers whose start is reserved and who sleep until it. */
  readonly #granted = new Map<NodeJS.Timeout, Waiter>();
  #closed = false;
  /** Names this process's word in Redis on how urgent its waiting work is. */
  readonly #processId = randomUUID();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly opts: GovernorOptions,
  ) {}

  #quota(country: Country): GovernedQuota {
    const q = this.opts.quotas[country];
    if (!q) throw new Error(`no quota configured for ${country}`);
    return q;
  }

  #now(): number {
    return this.opts.clock?.() ?? Date.now();
  }

  /** The governor's keys of a country; `day` names the day's count. */
  #keys(country: Country, day = '') {
    const base = `${this.prefix}:gov:${country}`;
    return {
      tat: `${base}:tat`,
      odTat: `${base}:od-tat`,
      day: `${base}:day:${day}`,
      schedWaits: `${base}:sched-waits`,
      priority: `${base}:priority`,
    };
  }

  /**
   * How far ahead a caller may book a start: enough to absorb a late timer or a busy event loop (a
   * few ms on a loaded machine, which would otherwise lose slots at high rates), short enough that
   * on-demand work arriving meanwhile waits at most 1/Q plus this.
   */
  #aheadMs(interval: number): number {
    return Math.min(25, Math.max(10, 3 * interval));
  }

  /**
   * Resolves when the caller may send one call; rejects with DayQuotaSpentError when the day has no
   * call left for its lane, or with the signal's reason when it aborts first. `priority` is the
   * job's (BullMQ's numbers: lower first); scheduled work goes in its order across processes.
   */
  permit(country: Country, lane: Lane, priority = 0, signal?: AbortSignal): Promise<Permit> {
    this.#quota(country);
    if (this.#closed) return Promise.reject(new GovernorClosedError('the quota governor is closed'));
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    let line = this.#lines.get(country);
    if (!line) this.#lines.set(country, (line = { waiters: [], running: false, onDemandBlockedUntil: 0 }));
    return new Promise<Permit>((resolve, reject) => {
      const waiter: Waiter = { lane, priority, since: performance.now(), resolve, reject, signal };
      if (signal) {
        waiter.onAbort = () => {
          const i = line.waiters.indexOf(waiter);
          if (i >= 0) line.waiters.splice(i, 1);
          reject(signal.reason as Error);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      // On-demand waiters go before every scheduled one, then by priority, first come first served.
      const rank = (w: Waiter): number => (w.lane === 'ondemand' ? 0 : 1_000_000) + w.priority;
      const at = line.waiters.findIndex((w) => rank(w) > rank(waiter));
      if (at < 0) line.waiters.push(waiter);
      else line.waiters.splice(at, 0, waiter);
      if (!line.running) void this.#serve(country, line);
    });
  }

  async #serve(country: Country, line: { waiters: Waiter[]; running: boolean; onDemandBlockedUntil: number }): Promise<void> {
    line.running = true;
    try {
      while (line.waiters.length && !this.#closed) {
        const now = performance.now();
        // An on-demand head held back by its share lets scheduled waiters have the slots meanwhile.
        const head = line.onDemandBlockedUntil > now ? line.waiters.find((w) => w.lane === 'scheduled') : line.waiters[0];
        if (!head) {
          await this.#sleep(line.onDemandBlockedUntil - now);
          continue;
        }
        let answer: Answer;
        try {
          answer = await this.#take(country, head, line.waiters);
        } catch (err) {
          this.#settle(line, head, err as Error);
          continue;
        }
        if (answer.kind === 'ok') {
          this.#grant(country, line, head, answer);
        } else if (answer.kind === 'wait') {
          if (head.lane === 'ondemand' && answer.why === 'share') line.onDemandBlockedUntil = performance.now() + answer.ms;
          else await this.#sleep(answer.ms);
        } else if (answer.kind === 'day') {
          const day = quotaDayOf(this.#now(), this.opts.dayTimeZone);
          this.#settle(line, head, new DayQuotaSpentError(country, answer.reason, day.end));
        } else {
          try {
            await this.#seed(country);
          } catch (err) {
            this.#settle(line, head, err as Error);
          }
        }
      }
    } finally {
      line.running = false;
      // Nothing of this process waits any more: other processes need not wait for it.
      if (!line.waiters.length) void this.redis.hdel(this.#keys(country).priority, this.#processId).catch(() => undefined);
    }
  }

  #grant(
    country: Country,
    line: { waiters: Waiter[] },
    head: Waiter,
    answer: { delay: number; total: number; od: number; start: number },
  ): void {
    const i = line.waiters.indexOf(head);
    if (i >= 0) line.waiters.splice(i, 1);
    if (head.onAbort) head.signal?.removeEventListener('abort', head.onAbort);
    const day = quotaDayOf(this.#now(), this.opts.dayTimeZone);
    this.opts.usage.record(country, day.key, head.lane);
    const waitedMs = performance.now() - head.since + Math.max(0, answer.delay);
    // For `queues:status`: the day's total wait, whichever process waited. Best effort.
    this.redis.hincrby(this.#keys(country, day.key).day, 'wait_ms', Math.round(waitedMs)).catch(() => undefined);
    const m = this.opts.metrics;
    if (m) {
      const q = this.#quota(country);
      m.permits.inc({ country, lane: head.lane });
      m.permitWait.observe({ country, lane: head.lane }, waitedMs / 1_000);
      m.callsLeftToday.set({ country }, Math.max(0, q.perDay - answer.total));
      m.onDemandShareUsed.set({ country }, answer.od / Math.max(1, Math.floor(q.perDay * this.opts.onDemandShare)));
    }
    // The start is reserved: resolve when it comes, while the line goes on to the next waiter.
    const permit = { bookedAt: answer.start };
    if (answer.delay < 1) {
      head.resolve(permit);
      return;
    }
    const timer = setTimeout(() => {
      this.#granted.delete(timer);
      head.resolve(permit);
    }, answer.delay);
    this.#granted.set(timer, head);
  }

  #settle(line: { waiters: Waiter[] }, head: Waiter, err: Error): void {
    const i = line.waiters.indexOf(head);
    if (i >= 0) line.waiters.splice(i, 1);
    if (head.onAbort) head.signal?.removeEventListener('abort', head.onAbort);
    head.reject(err);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(
        () => {
          this.#timers.delete(timer);
          resolve();
        },
        Math.max(0, ms),
      );
      this.#timers.add(timer);
    });
  }

  #limits(country: Country, at: number): { day: QuotaDay; scheduled: number; onDemand: number } {
    const q = this.#quota(country);
    const day = quotaDayOf(at, this.opts.dayTimeZone);
    // The reserve shrinks with the day, so by midnight scheduled work may have spent all of it.
    const reserve = Math.ceil(q.perDay * this.opts.onDemandReserve * dayLeftFraction(day, at));
    return { day, scheduled: Math.max(0, q.perDay - reserve), onDemand: Math.floor(q.perDay * this.opts.onDemandShare) };
  }

  async #take(country: Country, head: Waiter, waiters: readonly Waiter[]): Promise<Answer> {
    const lane = head.lane;
    const scheduled = waiters.filter((w) => w.lane === 'scheduled');
    const mostUrgent = Math.min(head.priority, ...scheduled.map((w) => w.priority));
    const q = this.#quota(country);
    const at = this.#now();
    const { day, scheduled: scheduledLimit, onDemand } = this.#limits(country, at);
    const interval = 1_000 / q.perSecond;
    const odInterval = interval / this.opts.onDemandShare;
    const k = this.#keys(country, day.key);
    const raw = await this.redis.eval(
      TAKE_PERMIT,
      5,
      k.tat,
      k.odTat,
      k.day,
      k.schedWaits,
      k.priority,
      this.opts.clock ? String(at) : '',
      String(interval),
      String(q.burst),
      lane === 'ondemand' ? 'd' : 's',
      String(this.#aheadMs(interval)),
      String(lane === 'ondemand' ? q.perDay : scheduledLimit),
      String(onDemand),
      String(odInterval),
      String(Math.max(1, Math.floor(q.burst * this.opts.onDemandShare))),
      String(DAY_TTL_MS),
      String(Math.ceil(Math.max(1_000, 2 * interval))),
      scheduled.length ? '1' : '0',
      this.#processId,
      String(head.priority),
      String(mostUrgent),
      String(Math.max(500, 4 * interval)),
    );
    return parse(raw);
  }

  async #seed(country: Country, at = this.#now()): Promise<void> {
    const day = quotaDayOf(at, this.opts.dayTimeZone);
    const copy = await this.opts.usage.read(country, day.key);
    await this.redis.eval(SEED_DAY, 1, this.#keys(country, day.key).day, String(copy.calls), String(copy.onDemand), String(DAY_TTL_MS));
  }

  /** No call of the country starts within the next `ms` (an upstream 429 for the second's quota). */
  async hold(country: Country, ms: number): Promise<void> {
    const q = this.#quota(country);
    await this.redis.eval(
      HOLD,
      1,
      this.#keys(country).tat,
      this.opts.clock ? String(this.#now()) : '',
      String(ms),
      String(q.burst),
      String(1_000 / q.perSecond),
    );
  }

  /**
   * The upstream said the day's quota is spent: no call of any kind until the next quota day.
   * Returns the error that says so, for the call that learnt it.
   */
  async markDaySpent(country: Country): Promise<DayQuotaSpentError> {
    this.#quota(country);
    const day = quotaDayOf(this.#now(), this.opts.dayTimeZone);
    const key = this.#keys(country, day.key).day;
    await this.redis.multi().hset(key, 'spent', '1').hsetnx(key, 'total', '0').hsetnx(key, 'od', '0').pexpire(key, DAY_TTL_MS).exec();
    return new DayQuotaSpentError(country, 'spent', day.end);
  }

  /** A call's minimum spacing in the country: 1/Q. */
  intervalMs(country: Country): number {
    return 1_000 / this.#quota(country).perSecond;
  }

  /** The day's count and limits of a country, as every process sees them. */
  async day(country: Country, at = this.#now()): Promise<DayStatus> {
    const q = this.#quota(country);
    const limits = this.#limits(country, at);
    const [inRedis, odInRedis, spent, waitMs] = await this.redis.hmget(
      this.#keys(country, limits.day.key).day,
      'total',
      'od',
      'spent',
      'wait_ms',
    );
    // Not counted in Redis yet today (or Redis lost it): the MongoDB copy is what the next permit starts from.
    const copy = inRedis === null ? await this.opts.usage.read(country, limits.day.key) : undefined;
    const total = copy ? copy.calls : Number(inRedis);
    const od = copy ? copy.onDemand : Number(odInRedis ?? 0);
    return {
      country,
      day: limits.day,
      limit: q.perDay,
      used: total,
      onDemandUsed: od,
      scheduledLimit: limits.scheduled,
      onDemandLimit: limits.onDemand,
      spent: spent !== null,
      meanWaitMs: total > 0 && waitMs !== null ? Number(waitMs) / total : 0,
    };
  }

  /** Rejects every waiting caller and stops the lines (shutdown: their jobs are retried). */
  close(): void {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const [t, w] of this.#granted) {
      clearTimeout(t);
      w.reject(new GovernorClosedError('the quota governor closed before the call could start'));
    }
    this.#granted.clear();
    for (const line of this.#lines.values()) {
      for (const w of line.waiters.splice(0)) {
        if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
        w.reject(new GovernorClosedError('the quota governor closed while the call waited for its permit'));
      }
    }
  }
}
