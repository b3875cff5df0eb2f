import { Router, type Request } from 'express';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import { userOf } from '../auth.js';
import { endpointUrl } from '../paginate.js';
import { ACCOUNT_API_SECURITY, errors, limited } from '../openapi/responses.js';
import { dateTimeTextSchema, formatDateTime } from '../../../core/dates.js';
import { asinWatchSchema, browseWatchSchema, presentWatch } from '../../../watch/present.js';
import { countrySchema } from '../../../core/identifiers.js';
import { endpointRecordSchema, presentEndpoint } from '../../../alerts/endpoints/present.js';
import { productRecordSchema } from '../../../core/product.js';
import { presentProduct } from '../../../catalog/present.js';
import { historyPointRecordSchema, presentPoint } from '../../../catalog/history.js';
import { alertRecordSchema, presentAlert } from '../../../alerts/rules/present.js';
import { deliveryRecordSchema, presentDelivery } from '../../../alerts/deliveries/present.js';
import { accountSummary, DELIVERY_WINDOW, RECENT_CHANGES, RECENT_DAYS, SUMMARY_PAGE } from '../../../summary/account-summary.js';

/** GET /api/me/summary: the account page's data in one request (authenticated and limited by account-api.ts). */

const PATH = '/api/me/summary';

const more = (what: string) =>
  z
    .string()
    .nullable()
    .meta({ description: `The next page of ${what} (the list's own route), or null when this is all of them.` });

const summarySchema = z
  .object({
    data: z.object({
      account: z.object({ id: z.string(), name: z.string(), created_at: dateTimeTextSchema }),
      countries: z.array(countrySchema).meta({ description: 'The countries this instance serves (COUNTRIES): what an alert may name.' }),
      products: z.object({
        items: z
          .array(
            z.object({
              watch: asinWatchSchema,
              records: z.array(productRecordSchema).meta({ description: 'The product in each configured country that has it.' }),
            }),
          )
          .meta({ description: `The ${SUMMARY_PAGE} newest watched ASINs.` }),
        total: z.number().int().meta({ description: 'Watched ASINs in all.' }),
        more: more('watched ASINs'),
      }),
      browse_nodes: z.object({
        items: z.array(browseWatchSchema).meta({ description: `The ${SUMMARY_PAGE} newest watched browse nodes.` }),
        total: z.number().int(),
        more: more('watched browse nodes'),
      }),
      recent_changes: z.array(historyPointRecordSchema.extend({ asin: z.string(), country: z.string() })).meta({
        description: `The ${RECENT_CHANGES} newest history points of those products within ${RECENT_DAYS} days, newest first; each product's full history is at /api/world/asin/{asin}/history.`,
      }),
      alerts: z.object({
        items: z
          .array(
            alertRecordSchema.extend({
              latest_delivery: deliveryRecordSchema.nullable().meta({
                description: `The alert's newest delivery among the account's ${DELIVERY_WINDOW} newest; null when none of them is its (all are at /api/alerts/{id}/deliveries).`,
              }),
            }),
          )
          .meta({ description: `The ${SUMMARY_PAGE} newest alerts.` }),
        total: z.number().int(),
        more: more('alerts'),
      }),
      endpoints: z.object({
        items: z
          .array(endpointRecordSchema)
          .meta({ description: `The ${SUMMARY_PAGE} newest endpoints, of every channel, with their state (as GET /api/webhooks).` }),
        total: z.number().int(),
        more: more('endpoints'),
      }),
    }),
  })
  .meta({ id: 'AccountSummary' });

export const summaryPaths: ZodOpenApiPathsObject = {
  [PATH]: {
    get: {
      tags: ['Account'],
      security: ACCOUNT_API_SECURITY,
      operationId: 'getAccountSummary',
      summary:
        'What the account page shows, in one request: the account, its watched products and browse nodes, their recent changes, its alerts and endpoints',
      description:
        `A fixed handful of bounded queries on indexes, whatever the account holds: the first ${SUMMARY_PAGE} watched ASINs, ` +
        `browse nodes, alerts and endpoints with their totals and a link to the next page, the configured countries, the products' latest state, their ${RECENT_CHANGES} newest ` +
        'history points, and the latest delivery of each alert. Charts are not included (history.svg, one per product).',
      responses: { 200: limited('The summary; never cached.', summarySchema), ...errors(401, 429) },
    },
  },
};

/** The first page after the summary's of a list route, as an absolute link like the lists' own. */
function nextPage(req: Request, appUrl: string | undefined, listPath: string, query: string, total: number): string | null {
  if (total <= SUMMARY_PAGE) return null;
  const base = endpointUrl(req, appUrl);
  return `${base.slice(0, base.length - PATH.length)}${listPath}?${query}limit=${SUMMARY_PAGE}&page=2`;
}

export function summaryRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  const appUrl = ctx.config.http.appUrl;
  router.get(PATH, async (req, res) => {
    const user = userOf(res);
    const s = await accountSummary({ ...ctx, countries: ctx.config.countries }, user._id);
    // Each e-mail alert with its address's state (pending confirmation…), as the alert routes show it.
    const emailStates = await ctx.emailAddresses.statusesFor(
      user._id,
      s.alerts.items.map((v) => v.alert),
    );
    const byAsin = new Map<string, typeof s.products>();
    for (const p of s.products) byAsin.set(p.asin, [...(byAsin.get(p.asin) ?? []), p]);
    res.json({
      data: {
        account: { id: user._id.toHexString(), name: user.name, created_at: formatDateTime(user.created_at, tz) },
        countries: ctx.config.countries,
        products: {
          items: s.watches.items.map((w) => ({
            watch: presentWatch(w, tz),
            records: (byAsin.get(w.key) ?? []).map((p) => presentProduct(p, tz)),
          })),
          total: s.watches.total,
          more: nextPage(req, appUrl, '/api/watch', 'type=asin&', s.watches.total),
        },
        browse_nodes: {
          items: s.browseNodes.items.map((w) => presentWatch(w, tz)),
          total: s.browseNodes.total,
          more: nextPage(req, appUrl, '/api/watch', 'type=browse&', s.browseNodes.total),
        },
        recent_changes: s.changes.map((p) => ({ asin: p.asin, country: p.country, ...presentPoint(p, tz) })),
        alerts: {
          items: s.alerts.items.map((a, i) => {
            const latest = s.latestDelivery.get(a.alert._id.toHexString());
            return { ...presentAlert(a, tz, emailStates[i]), latest_delivery: latest ? presentDelivery(latest, tz) : null };
          }),
          total: s.alerts.total,
          more: nextPage(req, appUrl, '/api/alerts', '', s.alerts.total),
        },
        endpoints: {
          items: s.endpoints.items.map((e) => presentEndpoint(e, tz)),
          total: s.endpoints.total,
          more: nextPage(req, appUrl, '/api/webhooks', '', s.endpoints.total),
        },
      },
    });
  });
  return router;
}
