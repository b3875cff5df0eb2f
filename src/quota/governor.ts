import { randomUUID } from 'node:crypto';
import { evalScript } from '../db/redis.js';
import type { Redis } from '../db/redis.js';
import type { Country } from '../core/identifiers.js';
import type { Metrics } from '../core/metrics.js';
import type { DailyUsage } from './daily-usage.js';
import { DayQuotaSpentError, GovernorClosedError, UpstreamRefusingError } from '../core/errors.js';
import { CONFIRM_START, HOLD, SENT_LATE, TAKE_PERMIT } from './governor-scripts.js';
import { marginSteps, STRICT_FROM_INTERVAL_MS, strictPace } from './pace-margin.js';
import { breakerKey, untilProbeMs } from './breaker-keys.js';
import { DAY_FIELD, QUOTA_CLASSES, type ClassShares, type QuotaClass } from '../core/quota-classes.js';
import { isFairClass } from '../fairness/fair-classes.js';
import { MAX_PRIORITY } from '../fairness/fair-tags.js';
import { quotaDayOf } from './quota-day.js';
import { PaceMargins } from './pace-margins.js';
import { parseTakeAnswer, type TakeAnswer } from './permit-answer.js';
import { DAY_TTL_MS, QuotaDays, type Admission, type DayStatus } from './governor-day.js';
import { quotaIntervalMs } from '../../config/quota.js';
import { countryTag } from '../db/redis-keys.js';
import { localMs, ServerClock } from './server-clock.js';

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
  /**
   * Each class's share of Q under contention (its weight in the script's fair queuing), and for
   * every class but refresh the most of the day it may spend.
   */
  readonly shares: ClassShares;
  /** Share of the rest of the day's calls that the other classes leave to forced updates. */
  readonly forcedReserve: number;
  /** The MongoDB copy of the day's count. */
  readonly usage: DailyUsage;
  readonly metrics?: Metrics;
  /**
   * Tests and the simulated-day benchmark: a clock of their own. Without it the pace follows Redis's
   * clock, which every process shares, and the day follows this machine's.
   */
  readonly clock?: () => number;
}

/** A granted permit. */
export interface Permit {
  /**
   * The start the governor booked, in ms on its clock (Redis's, or the injected one). Every
   * process's booked starts keep the pace exactly; the call itself goes out when this process's
   * timer fires, a millisecond or so either side.
   */
  readonly bookedAt: number;
  /** When the governor granted it, on the same clock: what the caller waited from there is bookedAt − grantedAt. */
  readonly grantedAt: number;
  /**
   * Where the pace is strict, the time on the server's clock it counts the call as sent from (the
   * start's confirmation, or the grant of a start that was now): see QuotaGovernor.sending.
   */
  readonly sentAt?: number;
}

/** How much later than counted a call may go before the pace is told (ms): the clock's own error is a fraction of this. */
const LATE_SEND_MS = 1;

interface Waiter {
  readonly cls: QuotaClass;
  /** Lower goes first within the class: the job's BullMQ priority. */
  readonly rank: number;
  readonly since: number;
  readonly resolve: (permit: Permit) => void;
  readonly reject: (err: Error) => void;
  readonly signal?: AbortSignal;
  onAbort?: () => void;
}

interface Line {
  /** The breaker's probe's own line: its asks pass the open breaker. */
  readonly probe: boolean;
  readonly waiters: Waiter[];
  running: boolean;
  /** What this process last told Redis it waits in: each class's best rank. */
  told: Map<QuotaClass, number>;
  /** Ends the line's current wait early: a caller came that Redis has not been told of. */
  wake?: () => void;
}

/** The most urgent rank of each class among `waiters`. */
function bestRanks(waiters: readonly Waiter[]): Map<QuotaClass, number> {
  const best = new Map<QuotaClass, number>();
  for (const w of waiters) {
    const r = best.get(w.cls);
    if (r === undefined || w.rank < r) best.set(w.cls, w.rank);
  }
  return best;
}

/**
 * One governor per country, shared by every process through Redis: every upstream catalog call
 * takes a permit right before it goes on the wire (src/quota/governor-scripts.ts holds the pace,
 * the classes' fair shares of it and the day's count). Within a process, callers wait in one line
 * per country and only the line asks Redis, telling it which classes it waits in; the script picks
 * the class, and the line gives the start to that class's most urgent caller. So a process sends
 * Redis about one request per permit however many jobs wait.
 */
export class QuotaGovernor {
  /** One line per country, and one for its breaker's probe (`CC|probe`). */
  readonly #lines = new Map<string, Line>();
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Callers whose start is reserved and who sleep until it. */
  readonly #granted = new Map<NodeJS.Timeout, Waiter>();
  #closed = false;
  /** Names this process's word in Redis on what it waits in, and its reservations. */
  readonly #processId = randomUUID();
  #reservations = 0;
  readonly #refusalListeners = new Set<(country: Country, probeAt: number) => void>();

  readonly #days: QuotaDays;
  readonly #paces: PaceMargins;
  /** The scripts' clock against this process's: how late a call went after its start was counted. */
  readonly #serverClock = new ServerClock();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly opts: GovernorOptions,
  ) {
    this.#days = new QuotaDays({
      redis,
      quota: (country) => this.#quota(country),
      keys: (country, dayKey) => this.#keys(country, dayKey),
      dayTimeZone: opts.dayTimeZone,
      shares: opts.shares,
      forcedReserve: opts.forcedReserve,
      usage: opts.usage,
    });
    this.#paces = new PaceMargins({
      redis,
      paceKey: (country) => this.#keys(country).pace,
      intervalMs: (country) => this.intervalMs(country),
      now: () => (opts.clock ? String(this.#now()) : ''),
      ownClocks: !opts.clock,
    });
  }

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
    const base = `${countryTag(this.prefix, country)}:gov`;
    return {
      tat: `${base}:tat`,
      tags: `${base}:tags`,
      day: `${base}:day:${day}`,
      waiting: `${base}:waiting`,
      booked: `${base}:booked`,
      moved: `${base}:moved`,
      pace: `${base}:pace`,
      sent: `${base}:sent`,
      breaker: breakerKey(this.prefix, country),
    };
  }

  /**
   * How far ahead a caller may book a start: enough to absorb a late timer or a busy event loop (a
   * few ms on a loaded machine, which would otherwise lose slots at high rates), short enough that
   * a forced update arriving meanwhile waits at most 1/Q plus this.
   */
  #aheadMs(interval: number): number {
    return Math.min(25, Math.max(10, 3 * interval));
  }

  /**
   * How long a free start waits for the process whose class it belongs to before another process
   * takes it for one of its own classes: about one late timer, far below an interval at any Q a
   * share matters for, so the start is not lost and the share holds.
   */
  #lateMs(interval: number): number {
    return Math.min(25, Math.max(5, interval / 4));
  }

  /** How long a process's word on what it waits in holds without being said again. */
  #holdsMs(interval: number): number {
    return Math.max(500, 4 * interval);
  }

  /**
   * Resolves when the caller may send one call; rejects with DayQuotaSpentError when the day has no
   * call left for its class, or with the signal's reason when it aborts first. `rank` orders the
   * callers of one class, in this process and across processes (BullMQ's priority: lower first; a
   * caller that names none goes last). In a class queued fairly by account, rank 0 is the job of an
   * account that had nothing queued in the class, which takes the class's next start out of turn.
   */
  permit(country: Country, cls: QuotaClass, rank = MAX_PRIORITY, signal?: AbortSignal, opts: { probe?: boolean } = {}): Promise<Permit> {
    this.#quota(country);
    if (this.#closed) return Promise.reject(new GovernorClosedError('the quota governor is closed'));
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    const probe = opts.probe === true;
    const lineKey = probe ? `${country}|probe` : country;
    let line = this.#lines.get(lineKey);
    if (!line) this.#lines.set(lineKey, (line = { probe, waiters: [], running: false, told: new Map() }));
    const l = line;
    return new Promise<Permit>((resolve, reject) => {
      const waiter: Waiter = { cls, rank, since: performance.now(), resolve, reject, signal };
      if (signal) {
        waiter.onAbort = () => {
          const i = l.waiters.indexOf(waiter);
          if (i >= 0) l.waiters.splice(i, 1);
          reject(signal.reason as Error);
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      l.waiters.push(waiter);
      // Redis must hear at once of a class (or a more urgent caller) it was not told of: until it
      // does, other processes may take the starts this caller has a claim to.
      const told = l.told.get(cls);
      if (told === undefined || rank < told) l.wake?.();
      if (!l.running) void this.#serve(country, l);
    });
  }

  async #serve(country: Country, line: Line): Promise<void> {
    line.running = true;
    try {
      while (line.waiters.length && !this.#closed) {
        const mine = bestRanks(line.waiters);
        let answer: TakeAnswer;
        try {
          answer = await this.#take(country, mine, line.probe);
          line.told = mine;
        } catch (err) {
          // Redis is away: every caller fails (its job retries) rather than waiting blind.
          for (const w of [...line.waiters]) this.#settle(line, w, err as Error);
          continue;
        }
        if (answer.kind === 'ok') {
          const head = this.#first(line, answer.cls);
          if (head) this.#grant(country, line, head, answer);
        } else if (answer.kind === 'wait') {
          await this.#sleep(answer.ms, line);
        } else if (answer.kind === 'refused') {
          const err = new UpstreamRefusingError(country, answer.reason, untilProbeMs(answer.probeAt));
          for (const w of [...line.waiters]) this.#settle(line, w, err);
          for (const listener of this.#refusalListeners) listener(country, answer.probeAt);
        } else if (answer.kind === 'day') {
          const day = quotaDayOf(this.#now(), this.opts.dayTimeZone);
          for (const w of line.waiters.filter((x) => x.cls === answer.cls)) {
            this.#settle(line, w, new DayQuotaSpentError(country, answer.reason, day.end, answer.cls));
          }
        } else {
          try {
            await this.#days.seed(country, this.#now());
          } catch (err) {
            for (const w of [...line.waiters]) this.#settle(line, w, err as Error);
          }
        }
      }
    } finally {
      line.running = false;
      line.told = new Map();
      // Nothing of this process waits any more: other processes need not wait for it.
      if (!line.waiters.length) {
        const fields = QUOTA_CLASSES.map((c) => `${c}|${this.#processId}`);
        void this.redis.hdel(this.#keys(country).waiting, ...fields).catch(() => undefined);
      }
    }
  }

  /** The most urgent caller of a class, first come first served among equals. */
  #first(line: Line, cls: QuotaClass): Waiter | undefined {
    let best: Waiter | undefined;
    for (const w of line.waiters) if (w.cls === cls && (!best || w.rank < best.rank)) best = w;
    return best;
  }

  #grant(country: Country, line: Line, head: Waiter, answer: Extract<TakeAnswer, { kind: 'ok' }>): void {
    const i = line.waiters.indexOf(head);
    if (i >= 0) line.waiters.splice(i, 1);
    if (head.onAbort) head.signal?.removeEventListener('abort', head.onAbort);
    const day = quotaDayOf(this.#now(), this.opts.dayTimeZone);
    this.opts.usage.record(country, day.key, head.cls);
    const waitedMs = performance.now() - head.since + Math.max(0, answer.delay);
    // For `queues:status`: the day's total wait, whichever process waited. Best effort.
    this.redis.hincrby(this.#keys(country, day.key).day, 'wait_ms', Math.round(waitedMs)).catch(() => undefined);
    this.#paces.heard(country, answer.learnt, answer.run);
    const m = this.opts.metrics;
    if (m) {
      const q = this.#quota(country);
      m.paceMargin.set({ country }, answer.margin / 1_000);
      m.permits.inc({ country, class: head.cls });
      m.permitWait.observe({ country, class: head.cls }, waitedMs / 1_000);
      m.callsLeftToday.set({ country }, Math.max(0, q.perDay - answer.total));
      if (head.cls === 'forced') {
        m.forcedShareUsed.set({ country }, answer.own / Math.max(1, Math.floor(q.perDay * this.opts.shares.forced)));
      }
    }
    // The start is reserved: resolve when it comes, while the line goes on to the next waiter.
    const permit: Permit = { bookedAt: answer.start, grantedAt: answer.start - answer.delay };
    if (answer.delay < 1) {
      head.resolve(strictPace(this.intervalMs(country), answer.margin) ? { ...permit, sentAt: permit.grantedAt } : permit);
    } else this.#sleepUntilStart(country, head, answer.delay, permit, answer.reservation);
  }

  /**
   * Resolves a granted caller's permit when its start comes. A booked start is confirmed first: a
   * forced update may have taken it and moved this caller one slot on.
   */
  #sleepUntilStart(country: Country, head: Waiter, delay: number, permit: Permit, reservation?: string): void {
    const timer = setTimeout(() => {
      this.#granted.delete(timer);
      if (!reservation) {
        head.resolve(permit);
        return;
      }
      this.#confirm(country, reservation).then(
        (confirmed) => {
          if (this.#closed) head.reject(new GovernorClosedError('the quota governor closed before the call could start'));
          else if ('delay' in confirmed) {
            this.#sleepUntilStart(country, head, confirmed.delay, { ...permit, bookedAt: confirmed.start }, reservation);
          } else head.resolve({ ...permit, sentAt: confirmed.sentAt });
        },
        (err: Error) => head.reject(err),
      );
    }, delay);
    this.#granted.set(timer, head);
  }

  async #confirm(country: Country, reservation: string): Promise<{ delay: number; start: number } | { sentAt?: number }> {
    const k = this.#keys(country);
    const q = this.#quota(country);
    const raw = (await evalScript(
      this.redis,
      CONFIRM_START,
      4,
      k.booked,
      k.moved,
      k.sent,
      k.pace,
      this.opts.clock ? String(this.#now()) : '',
      reservation,
      String(quotaIntervalMs(q)),
      String(q.burst),
      String(STRICT_FROM_INTERVAL_MS),
      String(this.#paces.peerMs(country)),
    )) as string[];
    if (raw[0] === 'moved') return { delay: Number(raw[1]), start: Number(raw[2]) };
    if (raw[1] === undefined) return {};
    const sentAt = Number(raw[1]);
    if (!this.opts.clock) this.#serverClock.sample(sentAt, localMs());
    return { sentAt };
  }

  #settle(line: Line, w: Waiter, err: Error): void {
    const i = line.waiters.indexOf(w);
    if (i >= 0) line.waiters.splice(i, 1);
    if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
    w.reject(err);
  }

  /** Waits `ms`, or less when the line is woken. */
  #sleep(ms: number, line?: Line): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#timers.delete(timer);
        if (line?.wake === done) line.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.#timers.add(timer);
      if (line) line.wake = done;
    });
  }

  async #take(country: Country, mine: ReadonlyMap<QuotaClass, number>, probe: boolean): Promise<TakeAnswer> {
    const q = this.#quota(country);
    const at = this.#now();
    const { day, scheduled, own } = this.#days.limits(country, at);
    const interval = quotaIntervalMs(q);
    const table = QUOTA_CLASSES.map((c) => {
      const limit = c === 'forced' ? q.perDay : scheduled;
      const field = DAY_FIELD[c] ?? '';
      const ownLimit = c === 'refresh' ? q.perDay : own[c];
      return `${c}:${this.opts.shares[c]}:${limit}:${field}:${ownLimit}:${isFairClass(c) ? 1 : 0}`;
    }).join(';');
    const k = this.#keys(country, day.key);
    const id = `${this.#processId}:${++this.#reservations}`;
    const raw = await evalScript(
      this.redis,
      TAKE_PERMIT,
      9,
      k.tat,
      k.tags,
      k.day,
      k.waiting,
      k.booked,
      k.moved,
      k.pace,
      k.breaker,
      k.sent,
      this.opts.clock ? String(at) : '',
      String(interval),
      String(q.burst),
      String(this.#aheadMs(interval)),
      String(DAY_TTL_MS),
      String(this.#holdsMs(interval)),
      this.#processId,
      [...mine].map(([c, r]) => `${c}=${r}`).join(','),
      table,
      String(this.#lateMs(interval)),
      'forced' satisfies QuotaClass,
      id,
      String(marginSteps(interval).down),
      probe ? '1' : '0',
      String(STRICT_FROM_INTERVAL_MS),
      String(this.#paces.peerMs(country)),
    );
    const answer = parseTakeAnswer(raw, id);
    // The script's now is its start less its delay: a reading of the server's clock for free.
    if (answer.kind === 'ok' && !this.opts.clock) this.#serverClock.sample(answer.start - answer.delay, localMs());
    return answer;
  }

  /**
   * The call of `permit` goes now. Where the pace is strict it counted the call sent when its start
   * was confirmed; if this process's event loop was busy from then to now, the call reaches the
   * upstream that much later, and the next caller (in another process, on time) would reach a
   * one-call bucket less than an interval after it. So a call that goes late moves the next start
   * on by as much. Best effort, and off the call's path (the caller need not wait for it): the next
   * start is an interval away.
   */
  async sending(country: Country, permit: Permit): Promise<void> {
    if (permit.sentAt === undefined || this.opts.clock) return;
    const now = this.#serverClock.at();
    if (now === undefined || now - permit.sentAt < LATE_SEND_MS) return;
    const q = this.#quota(country);
    const k = this.#keys(country);
    this.opts.metrics?.lateSends.observe({ country }, (now - permit.sentAt) / 1_000);
    await evalScript(
      this.redis,
      SENT_LATE,
      2,
      k.sent,
      k.pace,
      now.toFixed(4),
      String(quotaIntervalMs(q)),
      String(q.burst),
      String(this.#paces.peerMs(country)),
    ).catch(() => undefined);
  }

  /** No call of the country starts within the next `ms` (an upstream 429 for the second's quota). */
  async hold(country: Country, ms: number): Promise<void> {
    const q = this.#quota(country);
    const k = this.#keys(country);
    await evalScript(
      this.redis,
      HOLD,
      2,
      k.tat,
      k.sent,
      this.opts.clock ? String(this.#now()) : '',
      String(ms),
      String(q.burst),
      String(quotaIntervalMs(q)),
    );
  }

  /**
   * A call was answered 429 soon after its slot: the country's margin grows (pace-margin.ts). Returns
   * the margin now, and how long and for how many calls every call of the country was answered 429.
   */
  paceThrottled(country: Country): Promise<{ marginMs: number; runMs: number; runCalls: number }> {
    return this.#paces.throttled(country);
  }

  /** A call went through: a run of 429s, if there was one, is over. Costs Redis nothing when there was none. */
  paceWentThrough(country: Country): void {
    this.#paces.wentThrough(country);
  }

  /** The country's margin on top of 1/Q (ms), as every process paces by it. */
  marginMs(country: Country): Promise<number> {
    return this.#paces.marginMs(country);
  }

  /** Called when a permit's ask found the country's breaker open, with the time of its next probe. */
  onRefused(listener: (country: Country, probeAt: number) => void): () => void {
    this.#refusalListeners.add(listener);
    return () => this.#refusalListeners.delete(listener);
  }

  /** A call's minimum spacing in the country: 1/Q. */
  intervalMs(country: Country): number {
    return quotaIntervalMs(this.#quota(country));
  }

  /**
   * The upstream said the day's quota is spent: no call of any kind until the next quota day.
   * Returns the error that says so, for the call that learnt it.
   */
  markDaySpent(country: Country): Promise<DayQuotaSpentError> {
    return this.#days.markDaySpent(country, this.#now());
  }

  /** The day's count and limits of a country, as every process sees them. */
  day(country: Country, at = this.#now()): Promise<DayStatus> {
    return this.#days.day(country, at);
  }

  /**
   * Whether a forced update may be queued in the country now, in one round trip: the breaker (the
   * upstream refuses the country) and the day's count, whose limits the caller checks.
   */
  admission(country: Country, at = this.#now()): Promise<Admission> {
    return this.#days.admission(country, at);
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
      line.wake?.();
      for (const w of line.waiters.splice(0)) {
        if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
        w.reject(new GovernorClosedError('the quota governor closed while the call waited for its permit'));
      }
    }
  }
}
