import type { Job } from 'bullmq';
import { expect } from 'vitest';
import type { Types } from 'mongoose';
import { Webhook } from 'standardwebhooks';
import type { ProductChange, Point } from '../../src/catalog/history.js';
import { closeRedis, createRedis } from '../../src/db/redis.js';
import { startGlobalWorker, type RunningGlobalWorker } from '../../workers/global-runner.js';
import { deliveryJob } from '../../jobs/deliver.js';
import type { TestContext } from './context.js';
import type { Received } from './webhook-receiver.js';

/**
 * Webhook deliveries without the simulator: changes made up by the test go through the real
 * DeliveryQueue (ctx.deliveries.enqueueFor), and delivery workers started here, each on a Redis
 * connection of its own as a separate process would have, send them to a real receiver.
 */

let seq = 0;

export function point(patch: Partial<Point> = {}): Point {
  return { at: new Date(), price: 1000, currency: 'JPY', availability: 'in_stock', buybox: true, rank: 100, ...patch };
}

/** A change of the product in JP with a key of its own (so it is a delivery of its own). */
export function changeOf(asin: string, before: Partial<Point> | null, after: Partial<Point> = {}): ProductChange {
  seq++;
  return { country: 'JP', asin, key: `JP.${asin}.${Date.now()}${seq}`, before: before ? point(before) : null, after: point(after) };
}

export interface TestDeliveryWorker extends RunningGlobalWorker {
  /** Stops the worker and its connection. */
  stop(): Promise<void>;
}

/** A delivery worker as the worker role starts one, with `now` as its clock. */
export async function startTestDeliveryWorker(t: TestContext, name: string, now?: () => Date): Promise<TestDeliveryWorker> {
  const connection = createRedis(t.ctx.redisTarget, 'blocking', t.ctx.logger, name);
  const running = await startGlobalWorker(deliveryJob, { ...t.ctx, shutdownMs: 2_000, ...(now ? { now } : {}) }, connection);
  return {
    ...running,
    async stop() {
      await running.close();
      await closeRedis(connection);
    },
  };
}

/** The body, verified with `secret` (throws when the signature does not verify). */
export function verified(secret: string, got: Received): Record<string, unknown> {
  const h = got.headers as Record<string, string>;
  return new Webhook(secret).verify(got.body, {
    'webhook-id': h['webhook-id']!,
    'webhook-timestamp': h['webhook-timestamp']!,
    'webhook-signature': h['webhook-signature']!,
  }) as Record<string, unknown>;
}

/** Jobs still to run in the deliveries queue. */
export async function pendingJobs(t: TestContext): Promise<Job[]> {
  return t.ctx.deliveryJobs.queue.getJobs(['wait', 'prioritized', 'delayed', 'active']);
}

/** A new account of the test's app: its id and the headers that authenticate as it. */
export async function testAccount(t: TestContext, email: string): Promise<{ id: Types.ObjectId; headers: Record<string, string> }> {
  const { user, token } = await t.ctx.users.create({ name: email, email });
  return { id: user._id, headers: { Authorization: `Bearer ${token}` } };
}

/** An alert's delivery records, as GET /api/alerts/{id}/deliveries answers them to its account. */
export async function deliveriesOf(
  t: TestContext,
  headers: Record<string, string>,
  alertId: string,
): Promise<{ id: string; status: string; attempts: number; response_code: number | null; last_error: string | null }[]> {
  return (await t.http.get(`/api/alerts/${alertId}/deliveries`).set(headers)).body.data;
}

/** Posts an alert of the account (country JP unless the body says) and answers its record; a 200 or 201 is expected. */
export async function createAlert(
  t: TestContext,
  headers: Record<string, string>,
  body: Record<string, unknown>,
): Promise<{ id: string; secret: string; endpoint_id: string }> {
  const res = await t.http
    .post('/api/alerts')
    .set(headers)
    .send({ country: 'JP', ...body });
  expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
  return res.body.data as { id: string; secret: string; endpoint_id: string };
}
