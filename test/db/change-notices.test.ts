import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import mongoose from 'mongoose';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { ChangeNotices, MAX_NAMED_IDS, type Change, type ChangeNotice } from '../../src/db/change-notices.js';
import { channelName } from '../../src/db/redis-keys.js';
import { documentTag, NoticedCache } from '../../src/db/noticed-cache.js';
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
  it('every kind of write to users and posts tells what it changed once it is done, and waits for the listeners', async () => {
    const heard: Change[] = [];
    let release: (() => void) | undefined;
    onWrites(conn, async (change) => {
      heard.push(change);
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
    const u0 = (await held).id as string;
    const idOf = async (email: string) => ((await users.findOne({ email }))!._id as mongoose.Types.ObjectId).toHexString();
    const any: Change = { topic: 'users' };
    // What each write says: the documents when its filter or its answer names them, the fields
    // for an update of named documents; "any document" otherwise.
    const steps: [string, () => Promise<unknown>, () => Promise<Change>][] = [
      ['create', () => users.create(fields(1)), async () => ({ topic: 'users', ids: [await idOf('u1@example.com')] })],
      [
        'insertMany',
        () => users.insertMany([fields(2), fields(3)]),
        async () => ({ topic: 'users', ids: [await idOf('u2@example.com'), await idOf('u3@example.com')] }),
      ],
      ['updateOne by email', () => users.updateOne({ email: 'u1@example.com' }, { $set: { title: 't' } }), async () => any],
      [
        'updateOne by _id',
        () => users.updateOne({ _id: u0 }, { $set: { token_hash: 'h0b' } }),
        async () => ({ topic: 'users', ids: [u0], fields: ['token_hash', 'updated_at'] }),
      ],
      [
        'updateMany by _id $in',
        async () => users.updateMany({ _id: mongoose.trusted({ $in: [u0, await idOf('u1@example.com')] }) }, { $unset: { title: 1 } }),
        async () => ({ topic: 'users', ids: [u0, await idOf('u1@example.com')], fields: ['title', 'updated_at'] }),
      ],
      [
        'upsert by _id',
        () => users.updateOne({ _id: u0 }, { $set: { title: 'u' } }, { upsert: true }),
        async () => ({ topic: 'users', ids: [u0] }),
      ],
      ['updateMany', () => users.updateMany({}, { $set: { tags: ['a'] } }), async () => any],
      [
        'findOneAndUpdate by email',
        () => users.findOneAndUpdate({ email: 'u2@example.com' }, { $set: { title: 'x' } }),
        async () => ({ topic: 'users', ids: [await idOf('u2@example.com')], fields: ['title', 'updated_at'] }),
      ],
      [
        'document save',
        async () => {
          const u = (await users.findOne({ email: 'u3@example.com' }))!;
          u.title = 'y';
          await u.save();
        },
        async () => ({ topic: 'users', ids: [await idOf('u3@example.com')], fields: ['title', 'updated_at'] }),
      ],
      [
        'bulkWrite',
        () => users.bulkWrite([{ updateOne: { filter: { email: 'u3@example.com' }, update: { $set: { title: 'z' } } } }]),
        async () => any,
      ],
    ];
    for (const [what, write, expected] of steps) {
      heard.length = 0;
      await write();
      const want = await expected();
      expect(heard, what).toHaveLength(1);
      expect({ ...heard[0], fields: heard[0]!.fields && [...heard[0]!.fields].sort() }, what).toEqual({ fields: undefined, ...want });
    }
    const u3 = await idOf('u3@example.com');
    const u1 = await idOf('u1@example.com');
    const deletes: [string, () => Promise<unknown>, Change][] = [
      ['document deleteOne', async () => (await users.findOne({ email: 'u3@example.com' }))!.deleteOne(), { topic: 'users', ids: [u3] }],
      ['deleteOne by email', () => users.deleteOne({ email: 'u2@example.com' }), { topic: 'users' }],
      ['deleteMany', () => users.deleteMany({ email: 'nobody@example.com' }), { topic: 'users' }],
      ['findOneAndDelete by email', () => users.findOneAndDelete({ email: 'u1@example.com' }), { topic: 'users', ids: [u1] }],
    ];
    for (const [what, write, want] of deletes) {
      heard.length = 0;
      await write();
      // A document's deleteOne runs the query's too: told twice, the same both times.
      expect(heard.length, what).toBeGreaterThan(0);
      for (const change of heard) expect(change, what).toEqual(want);
    }
    heard.length = 0;
    const post = await posts.create({ user_id: new mongoose.Types.ObjectId(), title: 'p' });
    expect(heard).toEqual([{ topic: 'posts', ids: [post.id as string] }]);
    heard.length = 0;
    await users.find({}).lean();
    await users.countDocuments();
    expect(heard).toEqual([]);
  });
});

describe('ChangeNotices', () => {
  it('tells the writing process at once and every other subscribed process through Redis, naming what changed', async () => {
    const [a, b] = await Promise.all([listening(), listening()]);
    const heardA: ChangeNotice[] = [];
    const heardB: ChangeNotice[] = [];
    a.onChange((n) => heardA.push(n));
    b.onChange((n) => heardB.push(n));
    const change: Change = { topic: 'users', ids: ['0123456789abcdef01234567'], fields: ['token_hash'] };
    const done = a.changed(change);
    expect(heardA).toEqual([change]);
    await done;
    await until('b heard', async () => heardB.length > 0);
    expect(heardB).toEqual([change]);

    // A change naming more documents than a message carries says "any document".
    heardB.length = 0;
    const many = Array.from({ length: MAX_NAMED_IDS + 1 }, (_, i) => i.toString(16).padStart(24, '0'));
    await a.changed({ topic: 'posts', ids: many });
    await until('b heard', async () => heardB.length > 0);
    expect(heardB).toEqual([{ topic: 'posts' }]);
  });

  it('hears a bare topic as a change to any of it, and anything it cannot read as `all`', async () => {
    const n = await listening();
    const heard: ChangeNotice[] = [];
    n.onChange((x) => heard.push(x));
    const channel = channelName(prefix, 'changed');
    const messages = ['users', 'not json', '{"topic":"users","ids":["nope"]}', '{"topic":"orders"}', '[]'];
    for (const m of messages) await redis().publish(channel, m);
    await until('all heard', async () => heard.length >= messages.length);
    expect(heard).toEqual([{ topic: 'users' }, 'all', 'all', 'all', 'all']);
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

/** A ChangeNotices that only this process hears: what a cache does with a notice, without Redis timing. */
function localNotices() {
  const listeners = new Set<(n: ChangeNotice) => void>();
  return {
    live: true,
    listen: () => undefined,
    onChange: (l: (n: ChangeNotice) => void) => (listeners.add(l), () => void listeners.delete(l)),
    tell: (n: ChangeNotice) => listeners.forEach((l) => l(n)),
  };
}

const A = 'aaaaaaaaaaaaaaaaaaaaaaaa';
const B = 'bbbbbbbbbbbbbbbbbbbbbbbb';

describe('NoticedCache', () => {
  it('without tags, keeps what it loaded until a change to its topics, and keeps nothing a change overtook', async () => {
    const n = await listening();
    const cache = new NoticedCache<string>(n, { topics: ['users'], ttlMs: 60_000, maxEntries: 10 });
    let loads = 0;
    const load = async () => `v${++loads}`;
    expect(await cache.get('k', load)).toBe('v1');
    expect(await cache.get('k', load)).toBe('v1');
    await n.changed({ topic: 'posts' });
    expect(await cache.get('k', load)).toBe('v1');
    await n.changed({ topic: 'users', ids: [A] });
    expect(await cache.get('k', load)).toBe('v2');

    // A load that was running when the change came is answered but not kept.
    let release!: () => void;
    const slow = cache.get('slow', () => new Promise<string>((r) => (release = () => r('old'))));
    await new Promise((r) => setImmediate(r));
    await n.changed({ topic: 'users' });
    release();
    expect(await slow).toBe('old');
    expect(await cache.get('slow', async () => 'new')).toBe('new');
    cache.close();
  });

  it('with tags, a change drops only the entries of the documents it names; one naming none, or `all`, drops every entry', async () => {
    const n = localNotices();
    const counted: string[] = [];
    const cache = new NoticedCache<{ owner: string; v: number }>(n, {
      topics: ['users'],
      ttlMs: 60_000,
      maxEntries: 10,
      tagsOf: (x) => [documentTag('users', x.owner)],
      count: (o) => counted.push(o),
    });
    let loads = 0;
    const loader = (owner: string) => async () => ({ owner, v: ++loads });
    const read = async (key: string, owner: string) => (await cache.get(key, loader(owner)))!.v;
    expect([await read('a1', A), await read('a2', A), await read('b', B)]).toEqual([1, 2, 3]);
    expect(counted).toEqual(['load', 'load', 'load']);

    n.tell({ topic: 'users', ids: [A], fields: ['token_hash'] });
    expect([await read('a1', A), await read('a2', A), await read('b', B)]).toEqual([4, 5, 3]);
    n.tell({ topic: 'posts', ids: [B] });
    expect(await read('b', B)).toBe(3);
    n.tell({ topic: 'users' });
    expect([await read('a1', A), await read('b', B)]).toEqual([6, 7]);
    n.tell('all');
    expect(await read('b', B)).toBe(8);
    expect(counted.filter((c) => c === 'hit')).toHaveLength(2);

    // A load overtaken by a change to its document is not kept; one to another document does not matter.
    let release!: () => void;
    const slow = (key: string, owner: string) => cache.get(key, () => new Promise((r) => (release = () => r({ owner, v: -1 }))));
    const overtaken = slow('a1', A);
    n.tell({ topic: 'users', ids: [A] });
    release();
    expect((await overtaken)!.v).toBe(-1);
    expect(await read('a1', A)).toBe(9);
    const passed = slow('b2', B);
    n.tell({ topic: 'users', ids: [A] });
    release();
    await passed;
    expect(await read('b2', B)).toBe(-1);
    cache.close();
  });

  it('shares one load among concurrent reads of a key, but not across a drop', async () => {
    const n = localNotices();
    const cache = new NoticedCache<{ owner: string; v: number }>(n, {
      topics: ['users'],
      ttlMs: 60_000,
      maxEntries: 10,
      tagsOf: (x) => [documentTag('users', x.owner)],
    });
    let loads = 0;
    const releases: (() => void)[] = [];
    const slow = () =>
      cache.get('k', () => {
        const v = ++loads;
        return new Promise((r) => releases.push(() => r({ owner: A, v })));
      });
    const first = [slow(), slow(), slow()];
    expect(loads).toBe(1);
    // Any drop (here of another document) ends the sharing: a read after it loads afresh.
    n.tell({ topic: 'users', ids: [B] });
    const after = slow();
    expect(loads).toBe(2);
    for (const release of releases) release();
    expect((await Promise.all(first)).map((x) => x!.v)).toEqual([1, 1, 1]);
    expect((await after)!.v).toBe(2);
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
