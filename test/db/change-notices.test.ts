import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import mongoose from 'mongoose';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { ChangeNotices, type ChangeNotice } from '../../src/db/change-notices.js';
import { NoticedCache } from '../../src/db/noticed-cache.js';
import { onWrites } from '../../src/models/change-events.js';
import { userModel } from '../../src/models/user.js';
import { postModel } from '../../src/models/post.js';
import { uniqueName } from '../helpers/context.js';
import { until } from '../helpers/until.js';

const logger = pino({ level: 'silent' });
let conn: mongoose.Connection;
const redises: Redis[] = [];
const notices: ChangeNotices[] = [];
const prefix = uniqueName('swt_notices');

function redis(): Redis {
  const r = new Redis(inject('redisUrl'));
  redises.push(r);
  return r;
}

async function listening(): Promise<ChangeNotices> {
  const n = new ChangeNotices(redis(), prefix, logger);
  notices.push(n);
  n.listen();
  await until('subscribed', async () => n.live);
  return n;
}

beforeAll(async () => {
  conn = await mongoose.createConnection(inject('mongoUri'), { dbName: uniqueName('sw_test_notices') }).asPromise();
});
afterAll(async () => {
  await Promise.all(notices.map((n) => n.close()));
  for (const r of redises) r.disconnect();
  await conn.dropDatabase();
  await conn.close();
});

describe('writes through mongoose tell the listeners of their connection', () => {
  it('every kind of write to users and posts tells its topic once it is done, and waits for the listeners', async () => {
    const heard: string[] = [];
    let release: (() => void) | undefined;
    onWrites(conn, async (topic) => {
      heard.push(topic);
      // The write waits for its listeners: the first one holds it until the test lets go.
      if (release === undefined) await new Promise<void>((r) => (release = r));
    });
    const users = userModel(conn);
    const posts = postModel(conn);
    const fields = (n: number) => ({ name: `u${n}`, email: `u${n}@example.com`, token_hash: `h${n}`, token_cipher: 'c' });
    const held = users.create(fields(0));
    let done = false;
    void held.then(() => (done = true));
    await until('the hook ran', async () => release !== undefined);
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    release!();
    await held;
    const steps: [string, () => Promise<unknown>][] = [
      ['create', () => users.create(fields(1))],
      ['insertMany', () => users.insertMany([fields(2), fields(3)])],
      ['updateOne', () => users.updateOne({ email: 'u1@example.com' }, { $set: { title: 't' } })],
      ['updateMany', () => users.updateMany({}, { $set: { tags: ['a'] } })],
      ['findOneAndUpdate', () => users.findOneAndUpdate({ email: 'u2@example.com' }, { $set: { title: 'x' } })],
      [
        'document save',
        async () => {
          const u = (await users.findOne({ email: 'u3@example.com' }))!;
          u.title = 'y';
          await u.save();
        },
      ],
      ['bulkWrite', () => users.bulkWrite([{ updateOne: { filter: { email: 'u3@example.com' }, update: { $set: { title: 'z' } } } }])],
      ['document deleteOne', async () => (await users.findOne({ email: 'u3@example.com' }))!.deleteOne()],
      ['deleteOne', () => users.deleteOne({ email: 'u2@example.com' })],
      ['deleteMany', () => users.deleteMany({ email: 'nobody@example.com' })],
      ['findOneAndDelete', () => users.findOneAndDelete({ email: 'u1@example.com' })],
    ];
    for (const [what, write] of steps) {
      heard.length = 0;
      await write();
      expect(heard, what).toContain('users');
      expect(new Set(heard), what).toEqual(new Set(['users']));
    }
    heard.length = 0;
    await posts.create({ user_id: new mongoose.Types.ObjectId(), title: 'p' });
    expect(heard).toEqual(['posts']);
    heard.length = 0;
    await users.find({}).lean();
    await users.countDocuments();
    expect(heard).toEqual([]);
  });
});

describe('ChangeNotices', () => {
  it('tells the writing process at once and every other subscribed process through Redis', async () => {
    const [a, b] = await Promise.all([listening(), listening()]);
    const heardA: ChangeNotice[] = [];
    const heardB: ChangeNotice[] = [];
    a.onChange((n) => heardA.push(n));
    b.onChange((n) => heardB.push(n));
    const done = a.changed('posts');
    expect(heardA).toEqual(['posts']);
    await done;
    await until('b heard', async () => heardB.length > 0);
    expect(heardB).toEqual(['posts']);
  });

  it('is not live while its subscription is down, and says `all` when it goes and when it is back', async () => {
    const n = await listening();
    const heard: ChangeNotice[] = [];
    n.onChange((x) => heard.push(x));
    const admin = redis();
    // Every subscriber goes (others' too: they only keep nothing for a moment); this one must come back.
    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await until('down', async () => heard.includes('all'));
    await until('back', async () => n.live && heard.filter((x) => x === 'all').length >= 2);
  });
});

describe('NoticedCache', () => {
  it('keeps what it loaded until a change to its topics, and keeps nothing a change overtook', async () => {
    const n = await listening();
    const cache = new NoticedCache<string>(n, { topics: ['users'], ttlMs: 60_000, maxEntries: 10 });
    let loads = 0;
    const load = async () => `v${++loads}`;
    expect(await cache.get('k', load)).toBe('v1');
    expect(await cache.get('k', load)).toBe('v1');
    await n.changed('posts');
    expect(await cache.get('k', load)).toBe('v1');
    await n.changed('users');
    expect(await cache.get('k', load)).toBe('v2');

    // A load that was running when the change came is answered but not kept.
    let release!: () => void;
    const slow = cache.get('slow', () => new Promise<string>((r) => (release = () => r('old'))));
    await new Promise((r) => setImmediate(r));
    await n.changed('users');
    release();
    expect(await slow).toBe('old');
    expect(await cache.get('slow', async () => 'new')).toBe('new');
    cache.close();
  });

  it('loads every time while notices are not live', async () => {
    let listens = 0;
    const quiet = { live: false, onChange: () => () => undefined, listen: () => void listens++ };
    const cache = new NoticedCache<string>(quiet, { topics: ['users'], ttlMs: 60_000, maxEntries: 10 });
    let loads = 0;
    await cache.get('k', async () => `v${++loads}`);
    await cache.get('k', async () => `v${++loads}`);
    expect(loads).toBe(2);
    // It asks for the subscription it lacks.
    expect(listens).toBe(2);
  });
});
