import { Cluster } from 'ioredis';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asins, completions, insertDue, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { keysOf } from '../helpers/redis-keys.js';
import { until } from '../helpers/until.js';
import { planCountry } from '../../src/scheduling/planner.js';
import { productModel } from '../../src/models/product.js';
import { countryTag } from '../../src/db/redis-keys.js';

/**
 * The product on a real Redis Cluster (test/cluster/global-setup.ts): refreshes, a forced update,
 * an EAN import, the directory's rate limit and the auth gate in JP and US. A script or MULTI
 * across slots would fail with CROSSSLOT, so the run itself shows each touches one slot; then
 * every key the run left is checked for its tag: each country's in one slot, apart from the other's.
 */
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({ COUNTRIES: 'JP,US', UPDATE_WAIT: '20s' });
});
afterAll(async () => {
  await p?.close();
});

/** The hash tag of a key: what a cluster hashes. */
const tagOf = (key: string): string | undefined => /^\{([^}]+)\}/.exec(key)?.[1];

describe('on a Redis Cluster', () => {
  it('runs refreshes, a forced update, an EAN import, rate limits and the auth gate, with every key of a country in its slot', async () => {
    expect(p.ctx.redis).toBeInstanceOf(Cluster);
    const cluster = p.ctx.redis as Cluster;
    const prefix = p.ctx.redisPrefix;

    for (const country of ['JP', 'US'] as const) {
      const list = await insertDue(p.ctx.mongo, asins(`B0CL${country}`, 40), { country });
      const done = completions(p.workers.workers.get(country)!, 4);
      expect((await planCountry(p.planner, country)).enqueued.batches).toBe(4);
      await done;
      const fresh = await productModel(p.ctx.mongo).countDocuments({
        country,
        asin: mongoose.trusted({ $in: list }),
        last_attempt_at: mongoose.trusted({ $ne: null }),
      });
      expect(fresh).toBe(40);
    }

    const u = await p.user('cluster@example.com');
    const forced = await p.http.get('/api/world/update?country=US&asin=B0CLUS0001').set(u.headers);
    expect(forced.status).toBe(200);
    expect(forced.body.data[0].asin).toBe('B0CLUS0001');

    const imported = Promise.all([completions(p.workers.imports.get('JP')!, 1), completions(p.workers.imports.get('US')!, 1)]);
    await p.http.post('/api/watch/ean').set(u.headers).send({ ean: '4901234567894' }).expect(202);
    await imported;

    await p.http.get('/api/user').expect(200);
    await p.http.get('/api/watch').set({ Authorization: 'Bearer not-a-token' }).expect(401);
    // The gate counts a failure after the 401 has gone out.
    await until(
      'the auth gate counted the failure',
      async () => (await keysOf(cluster, prefix)).some((k) => k.startsWith(`{${prefix}:auth}`)) || undefined,
    );

    const keys = await keysOf(cluster, prefix);
    const tags = new Map<string, string[]>();
    for (const key of keys) {
      const tag = tagOf(key);
      expect(tag, `${key} has no hash tag of the prefix`).toMatch(new RegExp(`^${prefix}:`));
      tags.set(tag!, [...(tags.get(tag!) ?? []), key]);
    }
    // What the run must have written, each under its group's tag.
    const jp = countryTag(prefix, 'JP').slice(1, -1);
    const us = countryTag(prefix, 'US').slice(1, -1);
    for (const tag of [jp, us, ...['accounts', 'auth', 'rl:directory'].map((g) => `${prefix}:${g}`)]) {
      expect(tags.has(tag), `no key tagged {${tag}}: ${[...tags.keys()].join(', ')}`).toBe(true);
    }
    const slotOf = async (tag: string): Promise<number> => cluster.cluster('KEYSLOT', `{${tag}}`);
    for (const [tag, members] of tags) {
      const slots = new Set(await Promise.all(members.map((k) => cluster.cluster('KEYSLOT', k))));
      expect([...slots], `keys of {${tag}}`).toEqual([await slotOf(tag)]);
    }
    const byCountry = tags.get(jp)!;
    // The queues (BullMQ's keys), the governor and the planner's state of a country share its slot.
    expect(byCountry.some((k) => k.includes(':refresh-JP:'))).toBe(true);
    expect(byCountry.some((k) => k.includes(':gov:'))).toBe(true);
    expect(byCountry.some((k) => k.includes(':plan:credit'))).toBe(true);
    expect(await slotOf(jp)).not.toBe(await slotOf(us));
  });
});
