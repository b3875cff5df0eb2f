import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { FairTags } from '../../src/fairness/fair-tags.js';
import { uniqueName } from '../helpers/context.js';
import { dropKeys } from '../helpers/redis-keys.js';
import { sharedTag } from '../../src/db/redis-keys.js';

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
  await dropKeys(producer, prefix);
  for (const r of connections) r.disconnect();
});

/** Adds each account's jobs at its fair tag, in the order given; then two workers run them all, one at a time each. */
async function serve(lane: string, adds: readonly { account: string; n: number; weight?: number }[]): Promise<string[]> {
  const queue = new Queue(lane, { connection: producer, prefix });
  for (const a of adds) {
    for (let i = 0; i < a.n; i++) {
      const t = await fair.tag(lane, a.account, a.weight ?? 1, queue);
      await queue.add('job', { account: a.account, tag: t.tag }, { priority: t.priority });
    }
  }
  const total = adds.reduce((n, a) => n + a.n, 0);
  const order: string[] = [];
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const work = async (job: Job): Promise<void> => {
    order.push((job.data as { account: string }).account);
    await fair.started(lane, (job.data as { tag: number }).tag);
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
    // Rounds of one job each: heavy, b, c three times, then heavy's rest. The two workers take their
    // jobs on two connections, so two starts close together may be seen in either order: a start may
    // swap with its neighbour. FIFO would start b after 12 of heavy's.
    const last = (who: string) => order.lastIndexOf(who);
    expect(last('b')).toBeLessThanOrEqual(9);
    expect(last('c')).toBeLessThanOrEqual(9);
    expect(order.slice(0, 4)).toEqual(expect.arrayContaining(['b', 'c', 'heavy']));
    expect(order.slice(10)).toEqual(Array(8).fill('heavy'));
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
    const queue = new Queue(lane, { connection: producer, prefix });
    // A backlog whose first half has already been served moves V; a newcomer starts there.
    for (let i = 0; i < 20; i++) await fair.tag(lane, 'heavy', 1, queue);
    await fair.started(lane, 10);
    const newcomer = await fair.tag(lane, 'new', 1, queue);
    const heavyNext = await fair.tag(lane, 'heavy', 1, queue);
    expect(newcomer).toMatchObject({ tag: 10, priority: 11, fresh: true });
    expect(heavyNext).toMatchObject({ tag: 20, priority: 21, fresh: false });
    await queue.close();
  });

  it("keeps the tags' order between jobs queued at different times: a backlog topped up later does not pass older jobs", async () => {
    const lane = uniqueName('lane');
    const queue = new Queue(lane, { connection: producer, prefix });
    const light = [];
    for (let i = 0; i < 10; i++) {
      await fair.tag(lane, 'heavy', 1, queue);
      light.push(await fair.tag(lane, 'light', 1, queue));
    }
    // Half served; the heavy account tops its backlog up while the light one's older jobs still wait.
    await fair.started(lane, 5);
    const later = await fair.tag(lane, 'heavy', 1, queue);
    expect(later.tag).toBe(10);
    expect(later.priority).toBeGreaterThan(Math.max(...light.slice(5).map((t) => t.priority)));
    await queue.close();
  });

  it('moves the base up when priorities reach the roll point, and the waiting jobs with it, keeping their order', async () => {
    const lane = uniqueName('lane');
    const small = new FairTags(producer, prefix, 20);
    const queue = new Queue(lane, { connection: producer, prefix });
    const add = async (account: string): Promise<number> => {
      const t = await small.tag(lane, account, 1, queue);
      await queue.add('job', { account, tag: t.tag }, { priority: t.priority });
      return t.tag;
    };
    for (let i = 0; i < 12; i++) await add('a');
    await small.started(lane, 8);
    for (let i = 0; i < 12; i++) await add('b');
    // b's tags run from 8 to 19 and a's end at 11: the next of a's (tag 12) is still below the roll point;
    // a long run of b's reaches it.
    for (let i = 0; i < 10; i++) await add('b');
    const waiting = await queue.getJobs(['prioritized'], 0, -1, true);
    const tags = waiting.map((j) => (j.data as { tag: number }).tag);
    // BullMQ's order is the tags' order, across the move.
    expect(tags).toEqual([...tags].sort((x, y) => x - y));
    expect(Math.max(...waiting.map((j) => j.priority))).toBe(29 - 8 + 1);
    expect(Number(await producer.get(`${sharedTag(prefix, `fair:${lane}`)}:base`))).toBe(8);
    await queue.obliterate({ force: true });
    await queue.close();
  });
});
