import { Router } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { Config } from '../../../../config/env.js';
import { durationOrZero } from '../../../../config/parsers.js';
import type { AppContext } from '../../context.js';
import { userOf } from '../auth.js';
import { bodyFields, validate } from '../validate.js';
import { NotFoundError, ValidationError } from '../../../core/errors.js';
import { asinSchema, type Country } from '../../../core/identifiers.js';
import { ALERT_CHANNELS, ALERT_KINDS, ALERT_REFERENCES, type AlertChannel } from '../../../models/alert.js';
import { webhookUrlSchema } from '../../../alerts/webhook-target.js';
import type { AlertTarget } from '../../../alerts/channels/target.js';
import { alertRecordSchema, createdAlertSchema, deliveryRecordSchema, presentAlert, presentDelivery } from '../../../alerts/present.js';
import { sendTestDelivery, TEST_OUTCOMES } from '../../../alerts/test-delivery.js';
import { TestSendLimits } from '../../../alerts/test-limits.js';
import type { AlertView } from '../../../alerts/service.js';
import type { Types } from 'mongoose';
import { endpointUrl, keptQuery, paginate, pagedSchema, pageQuerySchema } from '../paginate.js';
import { ACCOUNT_API_SECURITY, bodyToken, errors, limited } from '../openapi/responses.js';

/** A whole number from a JSON number or a form field's text. */
const wholeNumber = (min: number, max: number, error = `must be a whole number from ${min} to ${max}.`) =>
  z
    .union([z.number(), z.string().regex(/^\d+$/).transform(Number)], { error })
    .pipe(z.number({ error }).int({ error }).min(min, { error }).max(max, { error }));

/** A boolean from JSON or a form field's text. */
const flag = z.union([z.boolean(), z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1')], {
  error: 'must be true or false.',
});

const MAX_REARM_AFTER_MS = 30 * 86_400_000;
const REARM_AFTER_MESSAGE = 'must be a duration such as 30m, 6h or 1d, from 1s to 30d.';
/** A duration as the configuration writes them ("6h"), kept as posted and in ms. */
const rearmAfter = z
  .string({ error: REARM_AFTER_MESSAGE })
  .regex(/^\d+(ms|s|m|h|d)?$/, REARM_AFTER_MESSAGE)
  .transform((text) => ({ text, ms: durationOrZero.parse(text) }))
  .refine((v) => v.ms >= 1_000 && v.ms <= MAX_REARM_AFTER_MS, REARM_AFTER_MESSAGE)
  .meta({ override: { type: 'string', pattern: '^\\d+(ms|s|m|h|d)?$' } });

const EMAIL_MESSAGE = 'must be a valid e-mail address.';
/** One address; its domain in lower case, so that one mailbox is one endpoint however it is written. */
const emailAddress = z
  .string({ error: EMAIL_MESSAGE })
  .trim()
  .max(254, { error: 'must not be greater than 254 characters.' })
  .pipe(z.email({ error: EMAIL_MESSAGE }))
  .transform((v) => {
    const at = v.lastIndexOf('@');
    return `${v.slice(0, at)}${v.slice(at).toLowerCase()}`;
  });

/** Which kinds take which option: anything else posted with another kind is refused. */
const OPTION_KINDS = {
  price: ['price_below'],
  rearm_above: ['price_below'],
  rearm_after: ['price_below'],
  percent: ['price_drop', 'price_rise'],
  amount: ['price_drop', 'price_rise'],
  reference: ['price_drop', 'price_rise'],
  rank: ['rank_below', 'rank_above'],
} as const;

/** What creating an alert reads; the webhook URL's rule depends on ENDPOINT_ALLOW_PRIVATE. */
export function alertInputs(config: Pick<Config, 'countries' | 'alerts'>) {
  const countries = config.countries;
  const body = z
    .object({
      asin: z
        .string({ error: 'must be a string.' })
        .transform((v) => v.toUpperCase())
        .pipe(asinSchema),
      country: z
        .string({ error: `must be exactly one of ${countries.join(', ')}.` })
        .transform((v) => v.trim().toUpperCase())
        .refine((c): c is Country => countries.includes(c as Country), `must be exactly one of ${countries.join(', ')}.`)
        .meta({ override: { type: 'string', enum: [...countries] } }),
      kind: z.enum(ALERT_KINDS, { error: `must be one of ${ALERT_KINDS.join(', ')}.` }),
      price: wholeNumber(1, 1_000_000_000_000)
        .optional()
        .meta({ description: 'price_below: the threshold in minor units (yen, cents); the alert fires when the price goes below it.' }),
      rank: wholeNumber(1, 100_000_000).optional().meta({
        description:
          'rank_below / rank_above (required for them): the sales rank watched. rank_below fires when the rank comes to this or better (a smaller number) from worse or none; rank_above when it goes worse than this from this or better. Two alerts make a band.',
      }),
      percent: wholeNumber(1, 1_000, 'must be a whole number from 1 to 99 for price_drop, from 1 to 1000 for price_rise.').optional().meta({
        description:
          'price_drop (1–99) / price_rise (1–1000): fires when the price falls / rises at least this many percent against the last point. Exactly one of percent and amount.',
      }),
      amount: wholeNumber(1, 1_000_000_000_000).optional().meta({
        description:
          'price_drop / price_rise: fires when the price falls / rises at least this much (minor units) against the last point. Exactly one of percent and amount.',
      }),
      reference: z
        .enum(ALERT_REFERENCES, { error: `must be one of ${ALERT_REFERENCES.join(', ')}.` })
        .optional()
        .meta({
          description:
            'price_drop / price_rise: what the price is compared against. previous (default): the point before, on every change. lowest / highest: the lowest / highest price of the `days` before the change; at_creation: the price when the alert was posted (the first one seen if the product had none). Against those three it fires when the move is reached, not again while it holds.',
        }),
      days: wholeNumber(1, 365)
        .optional()
        .meta({ description: 'reference lowest / highest (and only those): the window in days, 1–365 (within HISTORY_DAYS).' }),
      rearm_above: wholeNumber(0, 1_000_000_000_000).optional().meta({
        description:
          'price_below: after firing, the alert fires again only once a point is at or above price + rearm_above (minor units). Absent: back at or above price re-arms it.',
      }),
      rearm_after: rearmAfter.optional().meta({
        description:
          'price_below: no second firing within this long of the last (by the points’ times), e.g. "6h"; a crossing within it is dropped, not deferred. From 1s to 30d.',
      }),
      fire_on_create: flag.optional().meta({
        description:
          'true: when the new alert’s condition already holds on the product’s current point (price_below: below the threshold; back_in_stock: in stock; out_of_stock: not in stock; rank_below / rank_above: the rank within / outside the band; price_drop / price_rise and buybox_change: the last change was such a move, or the price is that far from the lowest / highest), one delivery of that point is queued at creation. Not for any_change nor reference at_creation. Default false; only a creation (201) fires.',
      }),
      paused: flag.optional().meta({
        description:
          'true: the alert fires nothing until resumed (false, the default). Resuming fires nothing for changes made while paused.',
      }),
      channel: z
        .enum(ALERT_CHANNELS, { error: `must be one of ${ALERT_CHANNELS.join(', ')}.` })
        .optional()
        .meta({
          description:
            'Where deliveries go. webhook (default): a POST signed with Standard Webhooks to webhook_url, its body a WebhookPayload. slack, discord, teams: a message in the shape that service’s incoming webhook takes (Slack {text, blocks}; Discord {content, embeds}; Teams a message with an Adaptive Card, for a Workflows or incoming webhook) to webhook_url, that service’s webhook URL, which is kept sealed and shown redacted. email: a plain-text and HTML message to `email` through the server’s SMTP (422 when its operator has not configured one).',
        }),
      webhook_url: webhookUrlSchema(config.alerts.allowPrivate, config.alerts.allowedPorts)
        .optional()
        .meta({
          description: `Channels webhook (required for it, and the default channel), slack, discord and teams: where the POST goes. https, to port ${config.alerts.allowedPorts.join(' or ')} (ENDPOINT_ALLOWED_PORTS; any port where ENDPOINT_ALLOW_PRIVATE is on); it must not resolve to a private, loopback or link-local address.`,
        }),
      email: emailAddress.optional().meta({ description: 'Channel email (required for it, and only for it): the address.' }),
    })
    .superRefine((a, ctx) => {
      const channel = a.channel ?? 'webhook';
      if (channel === 'email') {
        if (a.email === undefined) ctx.addIssue({ code: 'custom', path: ['email'], message: 'is required for channel email.' });
        if (a.webhook_url !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['webhook_url'], message: 'is not for channel email (its address goes in email).' });
        }
      } else {
        if (a.webhook_url === undefined) {
          const message = a.channel === undefined ? 'is required.' : `is required for channel ${channel}.`;
          ctx.addIssue({ code: 'custom', path: ['webhook_url'], message });
        }
        if (a.email !== undefined) ctx.addIssue({ code: 'custom', path: ['email'], message: 'is only for channel email.' });
      }
      for (const [field, kinds] of Object.entries(OPTION_KINDS) as [keyof typeof OPTION_KINDS, readonly string[]][]) {
        if (a[field] !== undefined && !kinds.includes(a.kind)) {
          ctx.addIssue({ code: 'custom', path: [field], message: `is only for ${kinds.join(' and ')}.` });
        }
      }
      if (a.fire_on_create === true && (a.kind === 'any_change' || a.reference === 'at_creation')) {
        ctx.addIssue({
          code: 'custom',
          path: ['fire_on_create'],
          message: a.kind === 'any_change' ? 'is not for any_change.' : 'is not for reference at_creation (it cannot hold at creation).',
        });
      }
      if (a.days !== undefined && a.reference !== 'lowest' && a.reference !== 'highest') {
        ctx.addIssue({ code: 'custom', path: ['days'], message: 'is only for reference lowest and highest.' });
      }
      if ((a.kind === 'rank_below' || a.kind === 'rank_above') && a.rank === undefined)
        ctx.addIssue({ code: 'custom', path: ['rank'], message: `is required for ${a.kind}.` });
      if (a.kind === 'price_below' && a.price === undefined)
        ctx.addIssue({ code: 'custom', path: ['price'], message: 'is required for price_below.' });
      if (a.kind === 'price_drop' || a.kind === 'price_rise') {
        if (a.percent === undefined && a.amount === undefined) {
          ctx.addIssue({ code: 'custom', path: ['percent'], message: `is required for ${a.kind}, unless amount is given.` });
        }
        if (a.percent !== undefined && a.amount !== undefined) {
          ctx.addIssue({ code: 'custom', path: ['amount'], message: 'may not be given with percent: give exactly one of them.' });
        }
        const windowed = a.reference === 'lowest' || a.reference === 'highest';
        if (windowed && a.days === undefined)
          ctx.addIssue({ code: 'custom', path: ['days'], message: `is required for reference ${a.reference}.` });
        if (a.kind === 'price_drop' && a.percent !== undefined && a.percent > 99) {
          ctx.addIssue({ code: 'custom', path: ['percent'], message: 'must be a whole number from 1 to 99 for price_drop.' });
        }
      }
    });
  return {
    body,
    patch: z.object({ paused: flag.meta({ description: 'true pauses the alert; false resumes it (re-armed).' }) }),
    list: pageQuerySchema({ defaultLimit: 50, maxLimit: 100 }),
    id: z.object({ id: z.string().meta({ description: 'The alert id that POST /api/alerts answered.' }) }),
  };
}

/** Where a validated body delivers: its schema made sure the channel's field is there. */
function targetOf(a: { channel?: AlertChannel; webhook_url?: string; email?: string }): AlertTarget {
  const channel = a.channel ?? 'webhook';
  if (channel === 'email') {
    if (a.email === undefined) throw new ValidationError({ email: ['The email field is required for channel email.'] });
    return { channel, address: a.email };
  }
  if (a.webhook_url === undefined)
    throw new ValidationError({ webhook_url: [`The webhook url field is required for channel ${channel}.`] });
  return { channel, url: a.webhook_url };
}

const alertAnswer = z.object({ data: alertRecordSchema }).meta({ id: 'AlertAnswer' });
const createdAnswer = z.object({ data: createdAlertSchema }).meta({ id: 'CreatedAlertAnswer' });
const alertPage = pagedSchema(alertRecordSchema, 'AlertPage');
const testedAnswer = z
  .object({
    data: z.object({
      outcome: z.enum(TEST_OUTCOMES).meta({
        description:
          'What happened, as a class: delivered (a 2xx; for email the SMTP server accepted it), refused (another status: `status`), timed_out (no complete answer within DELIVERY_TIMEOUT), unreachable (no answer: the name did not resolve, the connection failed, or the address is not one this server calls). Nothing the remote said is shown.',
      }),
      status: z.number().int().nullable().meta({
        description:
          "The receiver's HTTP status; for email the SMTP server's reply code (250: accepted); null when none arrived (timed_out, unreachable).",
      }),
      ok: z.boolean().meta({ description: 'outcome is delivered (as a real delivery would count it acknowledged).' }),
      duration_ms: z.number().int().meta({ description: 'From the start of the attempt to its answer or failure.' }),
      error: z.string().nullable().meta({
        description: 'The outcome in words (`the receiver answered 500`), never the remote’s text; null when delivered.',
      }),
      webhook_id: z.string().meta({
        description: 'The webhook-id the test was sent with (test.…; a test is not a delivery); for email, the Message-ID’s left part.',
      }),
    }),
  })
  .meta({ id: 'AlertTestAnswer' });

/** A page of deliveries: an alert's here, the account's in deliveries.ts (one component of the document). */
export const deliveryPage = pagedSchema(deliveryRecordSchema, 'DeliveryPage');

export function alertsPaths(config: Pick<Config, 'countries' | 'alerts'>): ZodOpenApiPathsObject {
  const input = alertInputs(config);
  const common = { tags: ['Alerts'], security: ACCOUNT_API_SECURITY };
  const body = input.body.safeExtend(bodyToken);
  return {
    '/api/alerts': {
      get: {
        ...common,
        operationId: 'listAlerts',
        summary: "The caller's alerts, newest first",
        requestParams: { query: input.list },
        responses: { 200: limited('A page of alerts.', alertPage), ...errors(401, 422, 429) },
      },
      post: {
        ...common,
        operationId: 'createAlert',
        summary:
          'Create an alert: a signed webhook, a chat message or an e-mail when a product changes as described (watches the ASIN if needed)',
        description:
          'An account may hold several alerts on one product, of one kind too, that differ in their firing options (price, percent, amount, rank, reference, days, rearm_above, rearm_after) or target (channel and webhook_url or email): at most ACCOUNT_MAX_ALERTS_PER_PRODUCT on one product in one country, every kind counted (422 on `asin` past it), and ACCOUNT_MAX_ALERTS in all (422 on `kind`). Posting an alert identical to one the account has (same country, ASIN, kind, firing options and target) answers 200 with that alert, which takes the posted `paused` and is re-armed; concurrent identical posts make one alert.',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: body }, 'application/x-www-form-urlencoded': { schema: body } },
        },
        responses: {
          201: limited("The new alert, with its endpoint's signing secret.", createdAnswer),
          200: limited(
            'The account had this very alert (same country, ASIN, kind, firing options and target): it now has the posted `paused`, re-armed; with its endpoint’s signing secret.',
            createdAnswer,
          ),
          ...errors(401, 413, 415, 422, 429),
        },
      },
    },
    '/api/alerts/{id}': {
      get: {
        ...common,
        operationId: 'getAlert',
        summary: 'One of the caller’s alerts',
        requestParams: { path: input.id },
        responses: { 200: limited('The alert.', alertAnswer), ...errors(401, 404, 429) },
      },
      patch: {
        ...common,
        operationId: 'updateAlert',
        summary: 'Pause or resume an alert (its other options stay; POST /api/alerts sets them)',
        description:
          'A paused alert is not judged: it fires nothing, and resuming it fires nothing for what changed while it was paused. Resuming re-arms a price_below alert. `paused` is state, not part of what makes two alerts the same, so a PATCH never makes an alert identical to another.',
        requestParams: { path: input.id },
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: input.patch.safeExtend(bodyToken) },
            'application/x-www-form-urlencoded': { schema: input.patch.safeExtend(bodyToken) },
          },
        },
        responses: { 200: limited('The alert as it now is.', alertAnswer), ...errors(401, 404, 413, 415, 422, 429) },
      },
      delete: {
        ...common,
        operationId: 'deleteAlert',
        summary:
          'Delete an alert (deliveries queued for it alone are dropped; the watch stays; its endpoint goes when no other alert uses it)',
        requestParams: { path: input.id },
        responses: {
          200: limited('Deleted; the alert as it was.', z.object({ message: z.string(), data: alertRecordSchema })),
          ...errors(401, 404, 429),
        },
      },
    },
    '/api/alerts/{id}/test': {
      post: {
        ...common,
        operationId: 'testAlert',
        summary:
          "Send a sample delivery on the alert's channel now (one attempt within DELIVERY_TIMEOUT, not queued, not recorded) and answer what class of thing happened",
        description:
          "On channel webhook the body is a WebhookPayload of the alert (its product, kind and id) with `\"test\": true` and `sequence` 0: its product's last two history points, or points made up for its kind when the product has none. Signed with the endpoint's secret like a real delivery, through the same address checks, port rule and timeout. On the chat channels and email it is the message a real delivery would send for those points, marked [Test]. A receiver that fails, hangs or is refused still answers 200, with `ok: false` and the `outcome`; nothing the remote said (a body, an SMTP reply's text, a socket error) is shown. Nothing is recorded and the endpoint's health is not changed. Limits: ALERT_TESTS_PER_HOUR tests to one endpoint an hour and ALERT_TESTS_PER_DAY tests of the account a day (429 with Retry-After; a refused test counts nothing); 503 with Retry-After when the server is already sending ALERT_TESTS_IN_FLIGHT tests; 409 while the alert's endpoint is disabled (enable it first). On channel email only a confirmed address gets the test: 409, with a message saying why, while its email_status is pending (awaiting its owner's confirmation), unsubscribed or bounced; and it counts under the daily e-mail caps (429 with Retry-After, until midnight UTC, when one is spent).",
        requestParams: { path: input.id },
        requestBody: {
          required: false,
          content: {
            'application/json': { schema: z.object(bodyToken) },
            'application/x-www-form-urlencoded': { schema: z.object(bodyToken) },
          },
        },
        responses: {
          200: limited('The test ran; what class of answer the receiver gave.', testedAnswer),
          ...errors(401, 404, 409, 413, 429),
        },
      },
    },
    '/api/alerts/{id}/deliveries': {
      get: {
        ...common,
        operationId: 'listAlertDeliveries',
        summary: "An alert's webhook deliveries, newest first",
        requestParams: { path: input.id, query: input.list },
        responses: { 200: limited('A page of deliveries.', deliveryPage), ...errors(401, 404, 422, 429) },
      },
    },
  };
}

/** Account API alerts: create, list, read, delete, test, and read deliveries. Authenticated by account-api.ts. */
export function alertRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  const input = alertInputs(ctx.config);
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
    // Naming an address asks its owner (email-addresses.ts): a confirmation mail unless it is confirmed.
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
        alerts: ctx.alerts,
        config: ctx.config,
        logger: ctx.logger,
        limits: testLimits,
        emailAddresses: ctx.emailAddresses,
      },
      userOf(res)._id,
      id,
    );
    if (!tested) throw new NotFoundError('No such alert.');
    res.json({
      data: {
        outcome: tested.outcome,
        status: tested.status,
        ok: tested.ok,
        duration_ms: tested.durationMs,
        error: tested.error,
        webhook_id: tested.webhookId,
      },
    });
  });

  router.get('/api/alerts/:id/deliveries', async (req, res) => {
    const { id } = validate(input.id, req.params);
    const q = validate(input.list, req.query);
    const found = await ctx.alerts.deliveries(userOf(res)._id, id, q);
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
