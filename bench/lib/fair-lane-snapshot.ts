/**
 * A look inside fair queuing between accounts (src/fairness/fair-tags.ts) at one moment: a lane's
 * virtual time V, and per account its jobs queued and running with their BullMQ priorities and
 * start tags. The share figure says whether the lane was fair; this says why it was or was not.
 */
import { Queue } from 'bullmq';
import type { Redis } from '../../src/db/redis.js';
import type { Country } from '../../src/core/identifiers.js';
import type { QuotaClass } from '../../src/core/quota-classes.js';
import { queueName, queuePrefix } from '../../jobs/queue-names.js';
import { sharedTag } from '../../src/db/redis-keys.js';
import { fairLane } from '../../src/fairness/fair-classes.js';

interface Range {
  min: number;
  max: number;
}

export interface AccountInLane {
  /** Jobs waiting for a worker slot (prioritized or waiting), and jobs in one (mostly waiting for a permit). */
  queued: number;
  active: number;
  priority: Range | null;
  tag: Range | null;
  /** Priorities of the queued jobs only: what decides which job a free worker slot takes next. */
  queuedPriority: Range | null;
  /** Jobs backing off before another attempt (a failed one). */
  delayed: number;
  /** Jobs on a second or later attempt, and the last failure reason seen among them. */
  retried: number;
  lastFailure: string | null;
}

export interface LaneSnapshot {
  readonly queue: string;
  readonly lane: string;
  readonly at: number;
  /** The lane's V: the largest start tag of a job started so far. */
  readonly v: number | null;
  readonly accounts: Record<string, AccountInLane>;
}

const widen = (r: Range | null, x: number): Range => (r ? { min: Math.min(r.min, x), max: Math.max(r.max, x) } : { min: x, max: x });

/** The queue of `cls` in `country` (e.g. import-JP) and its fair lane (import:JP), on the run's key prefix. */
export async function snapshotLane(redis: Redis, prefix: string, country: Country, cls: QuotaClass): Promise<LaneSnapshot> {
  const q = new Queue(queueName(country, cls), { connection: redis, prefix: queuePrefix(prefix, country) });
  const lane = fairLane(cls, country);
  try {
    const [v, queued, active, delayed] = await Promise.all([
      redis.get(`${sharedTag(prefix, `fair:${lane}`)}:v`),
      q.getJobs(['prioritized', 'wait'], 0, -1),
      q.getJobs(['active'], 0, -1),
      q.getJobs(['delayed'], 0, -1),
    ]);
    const accounts: Record<string, AccountInLane> = {};
    const add = (job: (typeof queued)[number] | undefined, state: 'queued' | 'active' | 'delayed'): void => {
      const fair = (job?.data as { fair?: { account: string; tag: number } } | undefined)?.fair;
      if (!job || !fair) return;
      const a = (accounts[fair.account] ??= {
        queued: 0,
        active: 0,
        priority: null,
        tag: null,
        queuedPriority: null,
        delayed: 0,
        retried: 0,
        lastFailure: null,
      });
      if (job.attemptsMade > 0) {
        a.retried++;
        a.lastFailure = job.failedReason ?? a.lastFailure;
      }
      if (state === 'active') a.active++;
      else if (state === 'delayed') a.delayed++;
      else {
        a.queued++;
        a.queuedPriority = widen(a.queuedPriority, job.priority);
      }
      a.priority = widen(a.priority, job.priority);
      a.tag = widen(a.tag, fair.tag);
    };
    for (const job of queued) add(job, 'queued');
    for (const job of active) add(job, 'active');
    for (const job of delayed) add(job, 'delayed');
    return { queue: queueName(country, cls), lane, at: Date.now(), v: v === null ? null : Number(v), accounts };
  } finally {
    await q.close();
  }
}
