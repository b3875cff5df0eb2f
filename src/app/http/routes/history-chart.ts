import { createHash } from 'node:crypto';
import { Router } from 'express';
import mongoose from 'mongoose';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import type { Config } from '../../../../config/env.js';
import { MARKETPLACES } from '../../../../config/marketplaces.js';
import { validate } from '../validate.js';
import { intParam } from '../paginate.js';
import { userOf } from '../auth.js';
import { NotFoundError } from '../../../errors/index.js';
import { ACCOUNT_API_SECURITY, errors, notModified } from '../openapi/responses.js';
import { asinSchema, type Country } from '../../../catalog/identifiers.js';
import { requiredCountryParam } from '../../../catalog/world-query.js';
import { productModel } from '../../../models/product.js';
import { historyPointModel } from '../../../models/history-point.js';
import { LIST_QUERY_MAX_MS } from '../../../db/mongo.js';
import { renderPriceChart, type ChartPoint } from '../../../catalog/price-chart.js';

/**
 * `GET /api/world/asin/{asin}/history.svg`: a watched product's price history as an SVG chart
 * (src/catalog/price-chart.ts), from the points the JSON history route serves. Mounted after the
 * account API (api-routes.ts), whose guard and per-account rate limit cover every `/api/world`
 * path; the handler refuses a request that did not pass that guard all the same.
 */

/** The most points one chart reads and draws: the newest ones of its window. */
export const MAX_CHART_POINTS = 5_000;
/** Charts kept per api process, and how long: the window ends at the time a chart is drawn. */
const CHART_CACHE_ENTRIES = 500;
const CHART_CACHE_BYTES = 32 * 1024 * 1024;
const CHART_TTL_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

export function historyChartInputs(config: Pick<Config, 'countries'>) {
  return {
    path: z.object({ asin: asinSchema }),
    query: z.object({
      country: requiredCountryParam(config.countries),
      days: intParam(1, 365, 30, 'Days drawn, ending now.'),
      width: intParam(300, 1600, 600, 'Width of the image in pixels.'),
      height: intParam(150, 800, 300, 'Height of the image in pixels.'),
    }),
  };
}

export function historyChartPaths(config: Pick<Config, 'countries'>): ZodOpenApiPathsObject {
  const input = historyChartInputs(config);
  return {
    '/api/world/asin/{asin}/history.svg': {
      get: {
        tags: ['World catalogue'],
        security: ACCOUNT_API_SECURITY,
        operationId: 'getWorldAsinHistoryChart',
        summary: "A watched product's price history in one country as an SVG chart",
        description:
          'A step line of the price over the last `days` days, the periods out of stock (or without a price) shaded, the ' +
          'lowest and highest price marked; prices in the marketplace’s currency and language, times in APP_TIMEZONE. ' +
          `At most the newest ${MAX_CHART_POINTS} points of the window are drawn. A product without points yet gets a chart ` +
          'saying so (200). Kept per product, country, size and last point for 5 minutes per api process; ' +
          '`Cache-Control: private, max-age=60` with an ETag. 404 when nobody watches the ASIN in that country.',
        requestParams: { path: input.path, query: input.query },
        responses: {
          200: {
            description: 'The chart.',
            content: { 'image/svg+xml': { schema: z.string() } },
            headers: z
              .object({
                ETag: z
                  .string()
                  .meta({ description: 'The chart’s entity tag: send it in If-None-Match to be answered 304 while it is unchanged.' }),
                'Cache-Control': z.string().meta({ example: 'private, max-age=60' }),
                'X-RateLimit-Limit': z.string().meta({ description: 'Requests allowed in the window.' }),
                'X-RateLimit-Remaining': z.string().meta({ description: 'Requests left in the window.' }),
              })
              .partial(),
          },
          ...notModified,
          ...errors(401, 404, 422, 429),
        },
      },
    },
  };
}

interface Chart {
  readonly body: Buffer;
  readonly etag: string;
}

interface ChartRequest {
  readonly country: Country;
  readonly asin: string;
  readonly days: number;
  readonly width: number;
  readonly height: number;
  readonly title: string | null;
}

export function historyChartRoutes(ctx: AppContext): Router {
  const router = Router();
  const input = historyChartInputs(ctx.config);
  const products = productModel(ctx.mongo);
  const points = historyPointModel(ctx.mongo);
  const tz = ctx.config.timeZone;

  const draw = async (r: ChartRequest): Promise<Chart> => {
    ctx.metrics.priceCharts.inc({ country: r.country, outcome: 'rendered' });
    const to = new Date();
    const from = new Date(to.getTime() - r.days * DAY_MS);
    const fields = { at: 1, price: 1, currency: 1, availability: 1, _id: 0 } as const;
    // The newest points of the window (index-bounded: country, asin, at), and the one the window begins in.
    const inWindow = await points
      .find({ country: r.country, asin: r.asin, at: mongoose.trusted({ $gte: from }) })
      .sort({ at: -1 })
      .limit(MAX_CHART_POINTS)
      .select(fields)
      .maxTimeMS(LIST_QUERY_MAX_MS)
      .lean<ChartPoint[]>();
    inWindow.reverse();
    const truncated = inWindow.length === MAX_CHART_POINTS;
    const before = truncated
      ? null
      : await points
          .findOne({ country: r.country, asin: r.asin, at: mongoose.trusted({ $lt: from }) })
          .sort({ at: -1 })
          .select(fields)
          .maxTimeMS(LIST_QUERY_MAX_MS)
          .lean<ChartPoint>();
    const drawn = before ? [before, ...inWindow] : inWindow;
    const market = MARKETPLACES[r.country];
    // Prices carry their currency; the newest one's is drawn (the marketplace's when none has a price).
    const currency = drawn.findLast((p) => p.price !== null && p.currency)?.currency ?? market.currency;
    const svg = await renderPriceChart({
      points: drawn,
      from,
      to,
      currency,
      locale: market.language.replace('_', '-'),
      timeZone: tz,
      width: r.width,
      height: r.height,
      title: r.title ?? r.asin,
      subtitle: [
        r.asin,
        r.country,
        `${r.days} ${r.days === 1 ? 'day' : 'days'}`,
        tz,
        ...(truncated ? [`newest ${MAX_CHART_POINTS} changes`] : []),
      ].join(' · '),
    });
    const body = Buffer.from(svg, 'utf8');
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
  };

  // One render per distinct request and last point per CHART_TTL_MS; concurrent requests for one share it.
  const charts = new LRUCache<string, Chart, ChartRequest>({
    max: CHART_CACHE_ENTRIES,
    maxSize: CHART_CACHE_BYTES,
    sizeCalculation: (c) => Math.max(1, c.body.length),
    ttl: CHART_TTL_MS,
    fetchMethod: (_key, _stale, { context }) => draw(context),
  });

  router.get('/api/world/asin/:asin/history.svg', async (req, res) => {
    userOf(res);
    const { asin } = validate(input.path, req.params);
    const q = validate(input.query, req.query);
    const product = await products
      .findOne({ country: q.country, asin, priority: mongoose.trusted({ $ne: null }) })
      .select({ title: 1, _id: 0 })
      .maxTimeMS(LIST_QUERY_MAX_MS)
      .lean<{ title?: string | null }>();
    if (!product) throw new NotFoundError('Nobody watches this ASIN in this country.');
    const last = await points
      .findOne({ country: q.country, asin })
      .sort({ at: -1 })
      .select({ at: 1, _id: 0 })
      .maxTimeMS(LIST_QUERY_MAX_MS)
      .lean<{ at: Date }>();
    const request: ChartRequest = {
      country: q.country,
      asin,
      days: q.days,
      width: q.width,
      height: q.height,
      title: product.title ?? null,
    };
    // A new point (or a new title) names a new chart.
    const key = JSON.stringify([q.country, asin, q.days, q.width, q.height, last?.at.getTime() ?? null, request.title]);
    const cached = charts.has(key);
    const chart = (await charts.fetch(key, { context: request })) ?? (await draw(request));
    if (cached) ctx.metrics.priceCharts.inc({ country: q.country, outcome: 'cached' });
    res.set('Content-Type', 'image/svg+xml; charset=utf-8');
    res.set('Cache-Control', 'private, max-age=60');
    res.set('ETag', chart.etag);
    // express answers 304 itself when If-None-Match names this ETag.
    res.send(chart.body);
  });

  return router;
}
