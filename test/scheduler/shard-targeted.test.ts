import type { CommandStartedEvent } from 'mongodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { asins, completions, insertDue, startPipeline, type Pipeline } from '../helpers/pipeline.js';
import { planCountry } from '../../src/scheduling/planner.js';

/**
 * On a sharded cluster a command that does not name its shard key goes to every shard. The refresh's
 * path (plan: due counts, picks and claims; the job: reads, writes and history points; a forced
 * update: claim and read) must name it on the products (country, ASIN) and history (country, ASIN,
 * time) collections: every command seen on them here gives the country, and every write the ASIN.
 */
let p: Pipeline;
beforeAll(async () => {
  p = await startPipeline({ COUNTRIES: 'JP,US' }, undefined, { commandEvents: true });
});
afterAll(async () => {
  await p?.close();
});

type Filter = Record<string, unknown> | undefined;

/** The filters a command selects documents by, and whether it writes. */
function filtersOf(c: Record<string, unknown>): { collection: string; filters: Filter[]; write: boolean } | undefined {
  const name = Object.keys(c)[0]!;
  const collection = String(c[name]);
  switch (name) {
    case 'find':
      return { collection, filters: [c.filter as Filter], write: false };
    case 'count':
    case 'distinct':
    case 'findAndModify':
      return { collection, filters: [c.query as Filter], write: name === 'findAndModify' };
    case 'aggregate':
      return { collection, filters: [((c.pipeline as Record<string, unknown>[])[0]?.$match as Filter) ?? {}], write: false };
    case 'update':
      return { collection, filters: (c.updates as { q: Filter }[]).map((u) => u.q), write: true };
    case 'delete':
      return { collection, filters: (c.deletes as { q: Filter }[]).map((d) => d.q), write: true };
    case 'insert':
      return { collection, filters: c.documents as Filter[], write: true };
    default:
      return undefined;
  }
}

/** A value that pins one key: a plain value or `{$eq}`; for the ASIN also a list (`$in`), one chunk range each. */
const pins = (v: unknown, list: boolean): boolean =>
  typeof v === 'string' ||
  (typeof v === 'object' && v !== null && ('$eq' in v || (list && '$in' in v && Array.isArray((v as { $in: unknown }).$in))));

it('every command of the refresh and the forced update on products and history names its shard key', async () => {
  const seen: { collection: string; command: string; filter: Filter; write: boolean }[] = [];
  const listen = (e: CommandStartedEvent): void => {
    const f = filtersOf(e.command as Record<string, unknown>);
    if (!f || !['products', 'history'].includes(f.collection)) return;
    for (const filter of f.filters) seen.push({ collection: f.collection, command: e.commandName, filter, write: f.write });
  };
  for (const country of ['JP', 'US'] as const) await insertDue(p.ctx.mongo, asins(`B0SK${country}`, 30), { country });
  const client = p.ctx.mongo.getClient();
  client.on('commandStarted', listen);
  try {
    for (const country of ['JP', 'US'] as const) {
      const done = completions(p.workers.workers.get(country)!, 3);
      await planCountry(p.planner, country);
      await done;
    }
    const u = await p.user('shards@example.com');
    await p.http.get('/api/world/update?country=US&asin=B0SKUS0001,B0SKUS0002').set(u.headers).expect(200);
  } finally {
    client.off('commandStarted', listen);
  }

  const kinds = new Set(seen.map((s) => `${s.collection}.${s.command}`));
  // What the path does, so that the rule below is checked on each.
  expect([...kinds]).toEqual(expect.arrayContaining(['products.aggregate', 'products.find', 'products.update', 'history.insert']));
  const scattered = seen.filter(
    (s) =>
      !pins(s.filter?.country, false) ||
      (s.write && !pins(s.filter?.asin, true)) ||
      (s.collection === 'history' && s.write && !s.filter?.at),
  );
  expect(scattered.map((s) => `${s.collection}.${s.command} ${JSON.stringify(s.filter)}`)).toEqual([]);
});
