import { Router } from 'express';
import type { Types } from 'mongoose';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import { userOf } from '../auth.js';
import { bodyFields, validate } from '../validate.js';
import { ConflictError, NotFoundError, ValidationError } from '../../../core/errors.js';
import { single } from '../../../catalog/world-query.js';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../../../models/delivery.js';
import type { Endpoint } from '../../../alerts/endpoints/endpoint.js';
import { deliveryRecordSchema, presentDelivery } from '../../../alerts/deliveries/present.js';
import { REPLAY_LIMIT } from '../../../alerts/deliveries/payload.js';
import { endpointUrl, keptQuery, paginate, pageQuerySchema } from '../paginate.js';
import { deliveryPage } from '../openapi/alerts.js';
import { ACCOUNT_API_SECURITY, bodyToken, errors, limited, tokenOnlyBody } from '../openapi/responses.js';

/** Without `status`: every delivery not acknowledged. */
const UNDELIVERED: readonly DeliveryStatus[] = ['pending', 'failed', 'gone'];

const listQuery = pageQuerySchema({ defaultLimit: 50, maxLimit: 100 }).extend({
  status: single('value')
    .transform((v, ctx): DeliveryStatus[] => {
      if (v === undefined || v.trim() === '') return [...UNDELIVERED];
      const wanted = [...new Set(v.split(',').map((s) => s.trim()))];
      if (!wanted.every((s): s is DeliveryStatus => (DELIVERY_STATUSES as readonly string[]).includes(s))) {
        ctx.addIssue({ code: 'custom', message: `must be one of ${DELIVERY_STATUSES.join(', ')}, or several separated by commas.` });
        return z.NEVER;
      }
      return wanted;
    })
    .meta({
      description: 'Only deliveries of this status (or of several, separated by commas); absent: every one not delivered.',
      override: { type: 'string', example: 'failed,gone' },
    }),
});
const LINK_PARAMS = Object.keys(listQuery.shape);
const deliveryParam = z.object({ id: z.string().meta({ description: "The delivery's id (its webhook-id)." }) });
const replayBody = z.object({
  endpoint_id: z
    .string({ error: 'must be a string.' })
    .max(100, 'must not be greater than 100 characters.')
    .optional()
    .meta({ description: 'Only deliveries to this endpoint (which must be enabled); absent: those of every enabled endpoint.' }),
});

const deliveryAnswer = z.object({ data: deliveryRecordSchema }).meta({ id: 'DeliveryAnswer' });
const replayedAnswer = z
  .object({
    message: z.string(),
    data: z.object({
      replayed: z
        .number()
        .int()
        .meta({ description: `Deliveries queued again by this call (at most ${REPLAY_LIMIT}).` }),
      more: z.boolean().meta({ description: 'Undelivered deliveries remain: call again.' }),
      skipped_disabled: z.number().int().meta({ description: 'Undelivered deliveries of disabled endpoints, left as they are.' }),
    }),
  })
  .meta({ id: 'ReplayedAnswer' });

/** 422 naming the way out: a delivery is never sent to a disabled endpoint. */
function disabledError(e: Endpoint): ValidationError {
  const id = e._id.toHexString();
  return new ValidationError({
    endpoint_id: [
      `The endpoint ${id} is disabled (${e.disabled_reason ?? 'no reason given'}): enable it with POST /api/webhooks/${id}/enable, then replay.`,
    ],
  });
}

export const deliveriesPaths: ZodOpenApiPathsObject = (() => {
  const common = { tags: ['Alerts'], security: ACCOUNT_API_SECURITY };
  const body = replayBody.extend(bodyToken);
  return {
    '/api/deliveries': {
      get: {
        ...common,
        operationId: 'listDeliveries',
        summary: "The caller's webhook deliveries, newest first (by default those not delivered); kept 30 days",
        requestParams: { query: listQuery },
        responses: { 200: limited('A page of deliveries.', deliveryPage), ...errors(401, 422, 429) },
      },
    },
    '/api/deliveries/{id}': {
      get: {
        ...common,
        operationId: 'getDelivery',
        summary: 'One of the caller’s deliveries',
        requestParams: { path: deliveryParam },
        responses: { 200: limited('The delivery.', deliveryAnswer), ...errors(401, 404, 429) },
      },
    },
    '/api/deliveries/{id}/replay': {
      post: {
        ...common,
        operationId: 'replayDelivery',
        summary:
          'Send a failed or gone delivery again, now, with a fresh retry schedule and the same webhook-id (409 when delivered or still pending; 422 when its endpoint is disabled)',
        requestParams: { path: deliveryParam },
        requestBody: tokenOnlyBody,
        responses: {
          202: limited('Queued again; the delivery as it now stands (pending).', deliveryAnswer),
          ...errors(401, 404, 409, 413, 422, 429),
        },
      },
    },
    '/api/deliveries/replay': {
      post: {
        ...common,
        operationId: 'replayDeliveries',
        summary: `Send every failed or gone delivery again (oldest first, at most ${REPLAY_LIMIT} a call), of one endpoint or of every enabled one`,
        requestBody: {
          required: false,
          content: { 'application/json': { schema: body }, 'application/x-www-form-urlencoded': { schema: body } },
        },
        responses: { 202: limited('How many were queued again.', replayedAnswer), ...errors(401, 404, 413, 415, 422, 429) },
      },
    },
  };
})();

/** The account API: the account's deliveries and their replay. Authenticated by account-api.ts. */
export function deliveryRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  const { records } = ctx.deliveries;
  const { endpoints } = ctx;

  router.get('/api/deliveries', async (req, res) => {
    const q = validate(listQuery, req.query);
    const { items, total } = await records.listForAccount(userOf(res)._id, q.status, q);
    res.json(
      paginate({
        items: items.map((d) => presentDelivery(d, tz)),
        total,
        page: q.page,
        perPage: q.limit,
        path: endpointUrl(req, ctx.config.http.appUrl),
        query: keptQuery(req.query, LINK_PARAMS),
      }),
    );
  });

  router.post('/api/deliveries/replay', async (req, res) => {
    const { endpoint_id } = validate(replayBody, bodyFields(req.body));
    const userId = userOf(res)._id;
    let endpointId: Types.ObjectId | undefined;
    if (endpoint_id !== undefined) {
      const endpoint = await endpoints.find(userId, endpoint_id);
      if (!endpoint) throw new NotFoundError('No such webhook endpoint.');
      if (endpoint.disabled_at) throw disabledError(endpoint);
      endpointId = endpoint._id;
    }
    const skipEndpoints = endpointId ? [] : await endpoints.disabledIds(userId);
    const { replayed, more } = await ctx.deliveries.replayMany(userId, { endpointId, skipEndpoints });
    const skipped = await records.countUndelivered(userId, skipEndpoints);
    res.status(202).json({
      message: `${replayed} deliver${replayed === 1 ? 'y' : 'ies'} queued again.`,
      data: { replayed, more, skipped_disabled: skipped },
    });
  });

  router.get('/api/deliveries/:id', async (req, res) => {
    const { id } = validate(deliveryParam, req.params);
    const found = await records.find(userOf(res)._id, id);
    if (!found) throw new NotFoundError('No such delivery.');
    res.json({ data: presentDelivery(found, tz) });
  });

  router.post('/api/deliveries/:id/replay', async (req, res) => {
    const { id } = validate(deliveryParam, req.params);
    const userId = userOf(res)._id;
    const found = await records.find(userId, id);
    if (!found) throw new NotFoundError('No such delivery.');
    if (found.status === 'delivered') throw new ConflictError('The delivery was acknowledged (delivered): there is nothing to replay.');
    if (found.status === 'pending')
      throw new ConflictError('The delivery is still pending (queued or between retries): it needs no replay.');
    if (!found.replayable || !found.endpoint_id) {
      throw new ConflictError('The delivery was recorded before deliveries kept their content: it cannot be replayed.');
    }
    const endpoint = await endpoints.find(userId, found.endpoint_id.toHexString());
    if (!endpoint) throw new ConflictError('The delivery’s endpoint no longer exists.');
    if (endpoint.disabled_at) throw disabledError(endpoint);
    const claimed = await ctx.deliveries.replay(userId, id);
    // Another request replayed it between the read and the claim.
    if (!claimed) throw new ConflictError('The delivery is still pending (queued or between retries): it needs no replay.');
    res.status(202).json({ data: presentDelivery(claimed.record, tz) });
  });

  return router;
}
