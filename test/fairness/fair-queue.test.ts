import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { FairTags } from '../../src/fairness/fair-tags.js';
import { uniqueName } from '../helpers/context.js';

/**
 * Fair queuing between accounts on open BullMQ: jobs added at their account's start tag
 * (src/fairness/fair-tags.ts) are served round-robin by account, whichever worker process takes
 * them. Two workers on two connections stand for two processes.
 */
const prefix = uniqueName('swt_fq');
const connections: Redis[] = [];
const connect = (): Redis => {
  const r = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
  connections.push(r);
  return r;
};
let producer: Redis;
let fair: FairTags;

beforeAll(() => {
  producer = connect();
  fair = new FairTags(producer, prefix);
});
afterAll(async () => {
  const keys = await producer.keys(`${prefix}*`);
  if (keys.length) await producer.del(...keys);
  for (const r of connections) r.disconnect();
});

/** Adds each account's jobs at its fair tag, in the order given; then two workers run them all, one at a time each. */
async function serve(lane: string, adds: readonly { account: string; n: number; weight?: number }[]): Promise<string[]> {
  const queue = new Queue(lane, { connection: producer, prefix });
  for (const a of adds) {
    for (let i = 0; i < a.n; i++) {
      const t = await fair.tag(lane, a.account, a.weight ?? 1);
      await queue.add('job', { account: a.account, tag: t.tag }, { priority: t.priority });
    }
  }
  const total = adds.reduce((n, a) => n + a.n, 0);
  const order: string[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const work = async (job: Job): Promise<void> => {
    await fair.started(lane, (job.data as { tag: number }).tag);
    order.push((job.data as { account: string }).account);
    await new Promise((r) => setTimeout(r, 20));
    if (order.length === total) done();
  };
  const workers = [0, 1].map(() => new Worker(lane, work, { connection: connect(), prefix, concurrency: 1 }));
  await all;
  await Promise.all(workers.map((w) => w.close()));
  await queue.close();
  return order;
}

describe('fair queuing between accounts (two worker processes)', () => {
  it('serves accounts round-robin: a backlog queued first does not hold the others behind it', async () => {
    const order = await serve(uniqueName('lane'), [
      { account: 'heavy', n: 12 },
      { account: 'b', n: 3 },
      { account: 'c', n: 3 },
    ]);
    // Rounds of one job each: heavy, b, c three times, then heavy's rest. FIFO would start b after 12 of heavy's.
    expect(order.slice(0, 9).sort()).toEqual(['b', 'b', 'b', 'c', 'c', 'c', 'heavy', 'heavy', 'heavy']);
    for (let round = 0; round < 3; round++) expect(new Set(order.slice(round * 3, round * 3 + 3))).toEqual(new Set(['heavy', 'b', 'c']));
    expect(order.slice(9)).toEqual(Array(9).fill('heavy'));
  });

  it('gives an account of weight 2 two jobs a round', async () => {
    const order = await serve(uniqueName('lane'), [
      { account: 'a', n: 8 },
      { account: 'double', n: 8, weight: 2 },
    ]);
    // Rounds of a's one against double's two: double's eight are done within the first twelve
    // starts (two workers racing for the same round may swap a neighbour or two), a's rest after.
    expect(order.slice(0, 12).filter((x) => x === 'double').length).toBeGreaterThanOrEqual(7);
    expect(order.slice(0, 6).filter((x) => x === 'double').length).toBeGreaterThanOrEqual(3);
    expect(order.slice(-3)).toEqual(['a', 'a', 'a']);
  });

  it('starts an account that comes later at the current round, not behind the backlog', async () => {
    const lane = uniqueName('lane');
    // A backlog whose first half has already been served moves V; a newcomer starts there.
    for (let i = 0; i < 20; i++) await fair.tag(lane, 'heavy');
    await fair.started(lane, 10);
    const newcomer = await fair.tag(lane, 'new');
    const heavyNext = await fair.tag(lane, 'heavy');
    expect(newcomer).toMatchObject({ tag: 10, priority: 1 });
    expect(heavyNext.tag).toBe(20);
    expect(heavyNext.priority).toBe(11);
  });
});
