import { Router } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import { userOf } from '../auth.js';
import { bodyFields, validate } from '../validate.js';
import { ConflictError, NotFoundError, ValidationError } from '../../../core/errors.js';
import {
  digestSettingsInputSchema,
  digestSettingsOf,
  mergedSettings,
  saveDigestSettings,
} from '../../../alerts/endpoints/digest-settings.js';
import { accountEventRecordSchema, presentEndpoint, presentEvent, endpointRecordSchema } from '../../../alerts/endpoints/present.js';
import { endpointUrl, keptQuery, paginate, pagedSchema, pageQuerySchema } from '../paginate.js';
import { ACCOUNT_API_SECURITY, bodyToken, errors, limited } from '../openapi/responses.js';

const listQuery = pageQuerySchema({ defaultLimit: 50, maxLimit: 100 });
const LINK_PARAMS = Object.keys(listQuery.shape);
const endpointParam = z.object({ id: z.string().meta({ description: 'The endpoint id (GET /api/webhooks, or an alert’s endpoint_id).' }) });
const eventParam = z.object({ id: z.string().meta({ description: 'The event id (GET /api/events).' }) });

const endpointAnswer = z.object({ data: endpointRecordSchema }).meta({ id: 'WebhookEndpointAnswer' });
const endpointPage = pagedSchema(endpointRecordSchema, 'WebhookEndpointPage');
const eventAnswer = z.object({ data: accountEventRecordSchema }).meta({ id: 'AccountEventAnswer' });
const eventPage = pagedSchema(accountEventRecordSchema, 'AccountEventPage');
const tokenOnly = z.object(bodyToken);
const settingsBody = digestSettingsInputSchema.safeExtend(bodyToken);

/** The webhook endpoints and the account's events for the OpenAPI document. */
export const webhooksPaths: ZodOpenApiPathsObject = (() => {
  const common = { tags: ['Alerts'], security: ACCOUNT_API_SECURITY };
  return {
    '/api/webhooks': {
      get: {
        ...common,
        operationId: 'listWebhookEndpoints',
        summary:
          "The caller's endpoints (one per channel and target its alerts use: a URL, an address), newest first, with their delivery health",
        requestParams: { query: listQuery },
        responses: { 200: limited('A page of endpoints.', endpointPage), ...errors(401, 422, 429) },
      },
    },
    '/api/webhooks/{id}': {
      get: {
        ...common,
        operationId: 'getWebhookEndpoint',
        summary: 'One of the caller’s webhook endpoints',
        requestParams: { path: endpointParam },
        responses: { 200: limited('The endpoint.', endpointAnswer), ...errors(401, 404, 429) },
      },
      patch: {
        ...common,
        operationId: 'updateWebhookEndpoint',
        summary: 'How the endpoint takes its alerts: at once, or in an hourly or daily digest; and its quiet hours',
        description:
          "Any of `delivery`, `digest_at` and `quiet_hours`; the others stay. `digest_at` (HH:MM) is required with `delivery: daily` and only taken with it (another delivery clears it). Times are in the account's time zone (PATCH /api/me). A digest lists every alert fired since the last, newest first, in one delivery; nothing fired, nothing sent. Alerts firing in quiet hours (start included, end excluded) are held and sent in one digest at their end. What is already held goes out at the time it was held for. 422 in the usual shape, and nothing changed, on a bad value.",
        requestParams: { path: endpointParam },
        requestBody: {
          required: true,
          content: { 'application/json': { schema: settingsBody }, 'application/x-www-form-urlencoded': { schema: settingsBody } },
        },
        responses: { 200: limited('The endpoint as it now is.', endpointAnswer), ...errors(401, 404, 413, 415, 422, 429) },
      },
      delete: {
        ...common,
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete an endpoint no alert uses (its delivery records go with it)',
        description:
          'An endpoint is also removed by itself when the last alert using it is deleted or moves to another target. 409 while an alert uses it (the message says how many and names some), or while another request is attaching an alert to it or removing it.',
        requestParams: { path: endpointParam },
        responses: { 204: { description: 'Deleted; no body.' }, ...errors(401, 404, 409, 429) },
      },
    },
    '/api/webhooks/{id}/enable': {
      post: {
        ...common,
        operationId: 'enableWebhookEndpoint',
        summary: 'Deliver to a disabled endpoint again (clears its failure span); replay what it missed with POST /api/deliveries/replay',
        requestParams: { path: endpointParam },
        requestBody: {
          required: false,
          content: { 'application/json': { schema: tokenOnly }, 'application/x-www-form-urlencoded': { schema: tokenOnly } },
        },
        responses: { 200: limited('The endpoint, enabled.', endpointAnswer), ...errors(401, 404, 413, 429) },
      },
    },
    '/api/events': {
      get: {
        ...common,
        operationId: 'listAccountEvents',
        summary: 'What the service did to the caller’s resources by itself (an endpoint disabled), newest first; kept 90 days',
        requestParams: { query: listQuery },
        responses: { 200: limited('A page of events.', eventPage), ...errors(401, 422, 429) },
      },
    },
    '/api/events/{id}': {
      get: {
        ...common,
        operationId: 'getAccountEvent',
        summary: 'One of the caller’s events',
        requestParams: { path: eventParam },
        responses: { 200: limited('The event.', eventAnswer), ...errors(401, 404, 429) },
      },
    },
  };
})();

/** The account API: the account's webhook endpoints (list, read, enable, delete) and its events. Authenticated by account-api.ts. */
export function webhookRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  const endpoints = ctx.endpoints;

  router.get('/api/webhooks', async (req, res) => {
    const q = validate(listQuery, req.query);
    const { items, total } = await endpoints.list(userOf(res)._id, q);
    res.json(
      paginate({
        items: items.map((e) => presentEndpoint(e, tz)),
        total,
        page: q.page,
        perPage: q.limit,
        path: endpointUrl(req, ctx.config.http.appUrl),
        query: keptQuery(req.query, LINK_PARAMS),
      }),
    );
  });

  router.get('/api/webhooks/:id', async (req, res) => {
    const { id } = validate(endpointParam, req.params);
    const endpoint = await endpoints.find(userOf(res)._id, id);
    if (!endpoint) throw new NotFoundError('No such webhook endpoint.');
    res.json({ data: presentEndpoint(endpoint, tz) });
  });

  router.patch('/api/webhooks/:id', async (req, res) => {
    const { id } = validate(endpointParam, req.params);
    const input = validate(digestSettingsInputSchema, bodyFields(req.body));
    const user = userOf(res)._id;
    const endpoint = await endpoints.find(user, id);
    if (!endpoint) throw new NotFoundError('No such webhook endpoint.');
    const settings = mergedSettings(digestSettingsOf(endpoint), input);
    if ('field' in settings) throw new ValidationError({ [settings.field]: [settings.message] });
    const saved = await saveDigestSettings(ctx.mongo, user, id, settings);
    if (!saved) throw new NotFoundError('No such webhook endpoint.');
    res.json({ data: presentEndpoint(saved, tz) });
  });

  router.delete('/api/webhooks/:id', async (req, res) => {
    const { id } = validate(endpointParam, req.params);
    const result = await endpoints.remove(userOf(res)._id, id);
    if (!result) throw new NotFoundError('No such webhook endpoint.');
    if ('usedBy' in result) {
      const { count, ids } = result.usedBy;
      const named = ids.map((i) => i.toHexString()).join(', ') + (count > ids.length ? ', …' : '');
      throw new ConflictError(
        `The endpoint is used by ${count} alert${count === 1 ? '' : 's'} (${named}): delete them or post them with another target first.`,
      );
    }
    if ('busy' in result) throw new ConflictError('Another request is attaching an alert to this endpoint or removing it; try again.');
    res.status(204).end();
  });

  router.post('/api/webhooks/:id/enable', async (req, res) => {
    const { id } = validate(endpointParam, req.params);
    const endpoint = await endpoints.enable(userOf(res)._id, id);
    if (!endpoint) throw new NotFoundError('No such webhook endpoint.');
    res.json({ data: presentEndpoint(endpoint, tz) });
  });

  router.get('/api/events', async (req, res) => {
    const q = validate(listQuery, req.query);
    const { items, total } = await ctx.endpoints.events.list(userOf(res)._id, q);
    res.json(
      paginate({
        items: items.map((e) => presentEvent(e, tz)),
        total,
        page: q.page,
        perPage: q.limit,
        path: endpointUrl(req, ctx.config.http.appUrl),
        query: keptQuery(req.query, LINK_PARAMS),
      }),
    );
  });

  router.get('/api/events/:id', async (req, res) => {
    const { id } = validate(eventParam, req.params);
    const event = await ctx.endpoints.events.find(userOf(res)._id, id);
    if (!event) throw new NotFoundError('No such event.');
    res.json({ data: presentEvent(event, tz) });
  });

  return router;
}
