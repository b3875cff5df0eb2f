import { Router } from 'express';
import type { Types } from 'mongoose';
import type { AppContext } from '../../context.js';
import { userOf } from '../auth.js';
import { bodyFields, validate } from '../validate.js';
import { NotFoundError } from '../../../core/errors.js';
import { alertInputs, targetOf } from '../../../alerts/rules/inputs.js';
import { presentAlert } from '../../../alerts/rules/present.js';
import type { AlertView } from '../../../alerts/rules/alert.js';
import { presentDelivery } from '../../../alerts/deliveries/present.js';
import { presentTest, sendTestDelivery } from '../../../alerts/deliveries/test-delivery.js';
import { TestSendLimits } from '../../../alerts/deliveries/test-limits.js';
import { endpointUrl, keptQuery, paginate } from '../paginate.js';
import { alertListQuery } from '../openapi/alerts.js';

/** Account API alerts: create, list, read, delete, test, and read deliveries. Authenticated by account-api.ts. */
export function alertRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  const input = { ...alertInputs(ctx.config), list: alertListQuery };
  const linkParams = Object.keys(input.list.shape);
  /** Alerts as answers show them, each e-mail alert with its address's state. */
  const present = async (userId: Types.ObjectId, views: readonly AlertView[]) => {
    const states = await ctx.emailAddresses.statusesFor(
      userId,
      views.map((v) => v.alert),
    );
    return views.map((v, i) => presentAlert(v, tz, states[i]));
  };
  const testLimits = new TestSendLimits(ctx.redis, ctx.redisPrefix, ctx.config.alerts.tests);

  router.post('/api/alerts', async (req, res) => {
    const a = validate(input.body, bodyFields(req.body));
    const target = targetOf(a);
    const saved = await ctx.alerts.create(userOf(res)._id, {
      asin: a.asin,
      country: a.country,
      kind: a.kind,
      price: a.price ?? null,
      percent: a.percent ?? null,
      rank: a.rank ?? null,
      amount: a.amount ?? null,
      reference: a.reference ?? 'previous',
      days: a.days ?? null,
      paused: a.paused ?? false,
      rearmAbove: a.rearm_above ?? null,
      rearmAfter: a.rearm_after ?? null,
      target,
    });
    // Naming an address asks its owner (src/alerts/endpoints/email-addresses.ts): a confirmation mail unless it is confirmed.
    if (target.channel === 'email') await ctx.emailAddresses.named(userOf(res)._id, target.address);
    if (saved.created && a.fire_on_create) {
      // The alert is made: a delivery that cannot be queued now is logged, not the request's failure.
      await ctx.deliveries
        .enqueueOnCreate(saved.alert)
        .catch((err: Error) =>
          ctx.logger.warn({ err: { message: err.message }, alert: saved.alert._id.toHexString() }, 'fire_on_create not queued'),
        );
    }
    const [shown] = await present(userOf(res)._id, [saved]);
    res.status(saved.created ? 201 : 200).json({ data: { ...shown!, secret: saved.secret } });
  });

  router.get('/api/alerts', async (req, res) => {
    const q = validate(input.list, req.query);
    const { items, total } = await ctx.alerts.list(userOf(res)._id, q);
    res.json(
      paginate({
        items: await present(userOf(res)._id, items),
        total,
        page: q.page,
        perPage: q.limit,
        path: endpointUrl(req, ctx.config.http.appUrl),
        query: keptQuery(req.query, linkParams),
      }),
    );
  });

  router.get('/api/alerts/:id', async (req, res) => {
    const { id } = validate(input.id, req.params);
    const alert = await ctx.alerts.find(userOf(res)._id, id);
    if (!alert) throw new NotFoundError('No such alert.');
    res.json({ data: (await present(userOf(res)._id, [alert]))[0] });
  });

  router.patch('/api/alerts/:id', async (req, res) => {
    const { id } = validate(input.id, req.params);
    const { paused } = validate(input.patch, bodyFields(req.body));
    const alert = await ctx.alerts.setPaused(userOf(res)._id, id, paused);
    if (!alert) throw new NotFoundError('No such alert.');
    res.json({ data: (await present(userOf(res)._id, [alert]))[0] });
  });

  router.delete('/api/alerts/:id', async (req, res) => {
    const { id } = validate(input.id, req.params);
    const removed = await ctx.alerts.remove(userOf(res)._id, id);
    if (!removed) throw new NotFoundError('No such alert.');
    res.json({ message: 'Deleted.', data: (await present(userOf(res)._id, [removed]))[0] });
  });

  router.post('/api/alerts/:id/test', async (req, res) => {
    const { id } = validate(input.id, req.params);
    const tested = await sendTestDelivery(
      {
        conn: ctx.mongo,
        rules: ctx.alerts,
        endpoints: ctx.endpoints,
        alerts: ctx.deliveries.alerts,
        config: ctx.config,
        logger: ctx.logger,
        limits: testLimits,
        emailAddresses: ctx.emailAddresses,
      },
      userOf(res)._id,
      id,
    );
    if (!tested) throw new NotFoundError('No such alert.');
    res.json({ data: presentTest(tested) });
  });

  router.get('/api/alerts/:id/deliveries', async (req, res) => {
    const { id } = validate(input.id, req.params);
    const q = validate(input.list, req.query);
    const found = await ctx.deliveries.forAlert(userOf(res)._id, id, q);
    if (!found) throw new NotFoundError('No such alert.');
    res.json(
      paginate({
        items: found.items.map((d) => presentDelivery(d, tz)),
        total: found.total,
        page: q.page,
        perPage: q.limit,
        path: endpointUrl(req, ctx.config.http.appUrl),
        query: keptQuery(req.query, linkParams),
      }),
    );
  });

  return router;
}
