import { createHash } from 'node:crypto';
import { Router } from 'express';
import mongoose from 'mongoose';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import type { Config } from '../../../../config/env.js';
import { MARKETPLACES } from '../../../../config/marketplaces.js';
import { validate } from '../validate.js';
import { intParam } from '../paginate.js';
import { userOf } from '../auth.js';
import { NotFoundError, ServiceUnavailableError } from '../../../core/errors.js';
import { ACCOUNT_API_SECURITY, errors, notModified } from '../openapi/responses.js';
import { asinSchema, type Country } from '../../../core/identifiers.js';
import { requiredCountryParam } from '../../../catalog/world-query.js';
import { productModel } from '../../../models/product.js';
import { historyPointModel } from '../../../models/history-point.js';
import { LIST_QUERY_MAX_MS } from '../../../db/mongo.js';
import type { ChartPoint } from '../../../catalog/price-chart.js';
import { CHART_DAYS, CHART_HEIGHTS, CHART_WIDTHS, presetQuery, snapTo, type ChartPreset } from '../../../catalog/chart-presets.js';
import { ChartCache, type Chart } from '../../../catalog/chart-cache.js';
import { RenderBudget } from '../../../accounts/render-budget.js';

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
/** Of those, the most one account's renders hold at once. */
const CHART_CACHE_PER_ACCOUNT = 50;
const DAY_MS = 86_400_000;

/** An integer in range, drawn at the nearest of `presets`. */
function presetParam(min: number, max: number, fallback: number, presets: readonly number[], what: string) {
  return intParam(min, max, fallback, `${what} Drawn at the nearest of ${presets.join(', ')} (a tie goes to the larger).`).transform((n) =>
    snapTo(n, presets),
  );
}

export function historyChartInputs(config: Pick<Config, 'countries'>) {
  return {
    path: z.object({ asin: asinSchema }),
    query: z.object({
      country: requiredCountryParam(config.countries),
      days: presetParam(1, 365, 30, CHART_DAYS, 'Days drawn, ending now.'),
      width: presetParam(300, 1600, 600, CHART_WIDTHS, 'Width of the image in pixels.'),
      height: presetParam(150, 800, 300, CHART_HEIGHTS, 'Height of the image in pixels.'),
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
          `At most the newest ${MAX_CHART_POINTS} points of the window are read, and thinned to at most two vertices per pixel of ` +
          'width (each column keeps its lowest, highest and last price). A product without points yet gets a chart saying so ' +
          '(200). Drawn at preset windows and sizes: `days`, `width` and `height` snap to the nearest preset, and ' +
          '`X-Chart-Preset` says which was drawn (as does the SVG’s own width and height). Kept per product, country, preset ' +
          'and last point for 5 minutes per api process; `Cache-Control: private, max-age=60` with an ETag. 404 when nobody ' +
          'watches the ASIN in that country. 429 with Retry-After past the account’s renders a minute ' +
          '(CHART_RENDERS_PER_MINUTE; charts answered from the cache do not count); 503 with Retry-After when the process’s ' +
          'render queue is full.',
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
                'X-Chart-Preset': z
                  .string()
                  .meta({ description: 'The window and size drawn, as a query.', example: 'days=30&width=600&height=300' }),
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

interface ChartRequest extends ChartPreset {
  readonly country: Country;
  readonly asin: string;
  readonly title: string | null;
}

export function historyChartRoutes(ctx: AppContext): Router {
  const router = Router();
  const input = historyChartInputs(ctx.config);
  const products = productModel(ctx.mongo);
  const points = historyPointModel(ctx.mongo);
  const tz = ctx.config.timeZone;
  const budget = new RenderBudget(ctx.redis, ctx.redisPrefix, ctx.config.charts.rendersPerMinute);

  const draw = async (r: ChartRequest): Promise<Chart> => {
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
    const svg = await ctx.charts.render({
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
    ctx.metrics.priceCharts.inc({ country: r.country, outcome: 'rendered' });
    const body = Buffer.from(svg, 'utf8');
    return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
  };

  // One render per distinct request and last point per CHART_TTL_MS; concurrent requests for one share it.
  const charts = new ChartCache({
    maxEntries: CHART_CACHE_ENTRIES,
    maxBytes: CHART_CACHE_BYTES,
    ttlMs: CHART_TTL_MS,
    perAccount: CHART_CACHE_PER_ACCOUNT,
  });

  /** The kept chart, the one being drawn, or a new one drawn within the account's budget. */
  const chartOf = async (key: string, account: string, request: ChartRequest): Promise<Chart> => {
    const kept = charts.get(key) ?? (await charts.drawing(key));
    if (kept) {
      ctx.metrics.priceCharts.inc({ country: request.country, outcome: 'cached' });
      return kept;
    }
    // A full queue refuses before the budget is spent and the points are read.
    ctx.charts.checkRoom();
    await budget.take(account);
    try {
      return await charts.draw(key, account, () => draw(request));
    } catch (err) {
      // Refused before it was drawn: it cost nothing.
      if (err instanceof ServiceUnavailableError) await budget.giveBack(account);
      throw err;
    }
  };

  router.get('/api/world/asin/:asin/history.svg', async (req, res) => {
    const account = userOf(res)._id.toHexString();
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
    const chart = await chartOf(key, account, request);
    res.set('Content-Type', 'image/svg+xml; charset=utf-8');
    res.set('Cache-Control', 'private, max-age=60');
    res.set('X-Chart-Preset', presetQuery(request));
    res.set('ETag', chart.etag);
    // express answers 304 itself when If-None-Match names this ETag.
    res.send(chart.body);
  });

  return router;
}
