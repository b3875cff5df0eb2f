import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { DailyUsage } from '../../src/quota/daily-usage.js';
import { quotaUsageModel } from '../../src/models/quota-usage.js';

/** The MongoDB copy of the day's calls: added up in memory, one write per country and day. */
let t: TestContext;
let writes = 0;
beforeAll(async () => {
  t = await createTestContext({}, { commandEvents: true });
  t.ctx.mongo.getClient().on('commandStarted', (e) => {
    if (e.commandName === 'update' && e.command.update === quotaUsageModel(t.ctx.mongo).collection.collectionName) writes++;
  });
});
afterAll(async () => {
  await t?.close();
});

const updates = (): number => writes;

describe('DailyUsage', () => {
  it('copies many calls in one write per country and day, each class in its own field, and the rest when it settles', async () => {
    const usage = new DailyUsage(t.ctx.mongo);
    const before = updates();
    for (let i = 0; i < 20; i++) usage.record('JP', '2026-11-25', 'refresh');
    for (let i = 0; i < 3; i++) usage.record('JP', '2026-11-25', 'forced');
    usage.record('JP', '2026-11-25', 'import', 2);
    usage.record('US', '2026-11-25', 'crawl');
    await usage.settled();
    expect(updates() - before).toBe(2);
    expect(await usage.read('JP', '2026-11-25')).toEqual({ calls: 25, forced: 3, imports: 2, crawls: 0 });
    expect(await usage.read('US', '2026-11-25')).toEqual({ calls: 1, forced: 0, imports: 0, crawls: 1 });
    usage.record('JP', '2026-11-25', 'refresh');
    await usage.settled();
    expect((await quotaUsageModel(t.ctx.mongo).findById('JP:2026-11-25').lean())?.calls).toBe(26);
  });
});
