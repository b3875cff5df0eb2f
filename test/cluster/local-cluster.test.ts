import { Cluster, type Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from './local-cluster.js';

let cluster: LocalCluster | undefined;
let client: Cluster | undefined;

beforeAll(async () => {
  const started = Date.now();
  cluster = await startLocalCluster();
  console.log(`cluster on ${cluster.nodes.map((n) => n.port).join(',')} up in ${Date.now() - started} ms`);
  // One seed is enough: the client learns the rest from CLUSTER SLOTS.
  client = new Cluster([cluster.nodes[0]!]);
});

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

/** The port of the master serving `key`'s slot, by CLUSTER SLOTS: [[from, to, [host, port, id], ...replicas], ...]. */
async function ownerPort(c: Cluster, key: string): Promise<number> {
  const slot = await c.cluster('KEYSLOT', key);
  const range = (await c.cluster('SLOTS')).find(([from, to]) => from <= slot && slot <= to);
  if (!range?.[2]) throw new Error(`no master serves slot ${slot}`);
  return range[2][1];
}

/** The client's own connection to that master, so that WAIT covers the writes sent on it. */
function masterConnection(c: Cluster, port: number): Redis {
  const node = c.nodes('master').find((n) => n.options.port === port);
  if (!node) throw new Error(`the client has no connection to master ${port}`);
  return node;
}

it('routes hash tags to different masters and keeps replicated data through a master failover', async () => {
  const [lc, c] = [cluster!, client!];
  await c.set('{a}x', 'a-before');
  await c.set('{b}y', 'b-before');
  expect(await c.get('{a}x')).toBe('a-before');
  expect(await c.get('{b}y')).toBe('b-before');

  const [portA, portB] = [await ownerPort(c, '{a}x'), await ownerPort(c, '{b}y')];
  expect(portA).not.toBe(portB);
  const mastersBefore = (await lc.masters()).map((m) => m.port);
  expect(mastersBefore).toHaveLength(3);
  expect(mastersBefore).toEqual(expect.arrayContaining([portA, portB]));
  // The keys are really stored where CLUSTER SLOTS says, not just routed there.
  const slotA = await c.cluster('KEYSLOT', '{a}x');
  expect(await masterConnection(c, portA).cluster('COUNTKEYSINSLOT', slotA)).toBe(1);
  expect(await masterConnection(c, portB).cluster('COUNTKEYSINSLOT', slotA)).toBe(0);

  // WAIT counts replicas that acknowledged this connection's writes, so ask on the connection that wrote.
  expect(await masterConnection(c, portA).wait(1, 1_000)).toBe(1);

  const killed = Date.now();
  await lc.kill(portA);
  await lc.waitHealthy(30_000);
  console.log(`failover of ${portA} healthy after ${Date.now() - killed} ms`);

  const mastersAfter = (await lc.masters()).map((m) => m.port);
  expect(mastersAfter).toHaveLength(3);
  expect(mastersAfter).not.toContain(portA);
  const newOwner = await ownerPort(c, '{a}x');
  expect(newOwner).not.toBe(portA);

  // Same client: it has to notice the dead node and follow the new slot map by itself.
  const readBack = Date.now();
  expect(await c.get('{a}x')).toBe('a-before');
  console.log(`first read after failover took ${Date.now() - readBack} ms`);
  await c.set('{a}x', 'a-after');
  expect(await c.get('{a}x')).toBe('a-after');
  expect(await c.get('{b}y')).toBe('b-before');
});
