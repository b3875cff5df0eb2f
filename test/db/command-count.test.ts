import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectMongo, countCommands } from '../../src/db/mongo.js';
import { uniqueName } from '../helpers/context.js';

/**
 * Round trips are counted from the pool's checkouts, not from command events (which make the driver
 * decode every reply twice): the count must still be one per command, cursors' getMores included.
 */
let conn: mongoose.Connection;
beforeAll(async () => {
  conn = await connectMongo({ uri: inject('mongoUri'), dbName: uniqueName('sw_cmdcount'), commandEvents: true });
});
afterAll(async () => {
  await conn.dropDatabase().catch(() => undefined);
  await conn.close();
});

describe('countCommands', () => {
  it('counts one per command the connection sends', async () => {
    let counted = 0;
    let sent = 0;
    countCommands(conn, () => counted++);
    conn.getClient().on('commandStarted', () => sent++);
    const things = conn.collection('things');
    await things.insertMany(Array.from({ length: 30 }, (_, i) => ({ i })));
    await things.updateOne({ i: 3 }, { $set: { seen: true } });
    await things.countDocuments({ i: mongoose.trusted({ $gte: 10 }) });
    // Batches of 7: a find and its getMores, each a round trip.
    expect(await things.find({}, { batchSize: 7 }).toArray()).toHaveLength(30);
    await things.aggregate([{ $match: { seen: true } }]).toArray();
    expect(sent).toBeGreaterThan(6);
    expect(counted).toBe(sent);
  });

  it('leaves command events off unless asked', async () => {
    const serving = await connectMongo({ uri: inject('mongoUri'), dbName: uniqueName('sw_cmdcount') });
    try {
      expect(serving.getClient().options.monitorCommands).toBe(false);
    } finally {
      await serving.close();
    }
  });
});
