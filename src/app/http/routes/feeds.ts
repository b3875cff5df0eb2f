import { Router, type Request } from 'express';
import { z } from 'zod';
import { Feed } from 'feed';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import type { AppContext } from '../../context.js';
import { validate } from '../validate.js';
import { errors } from '../openapi/responses.js';
import { createRateLimiter } from '../rate-limit.js';
import { single } from '../../../catalog/world-query.js';
import { NotFoundError } from '../../../core/errors.js';
import { dealField, type DealBasis, type DealWindow } from '../../../core/price-levels.js';
import type { DealProduct } from '../../../catalog/deals.js';
import { formatDateTime } from '../../../core/dates.js';
import { basisParam, daysParam } from './deals.js';

export const DEALS_FEED_PATH = '/api/feeds/deals.atom';

/** Entries a feed holds: its largest drops. */
const FEED_ENTRIES = 50;

const BASIS_WORDS: Record<DealBasis, string> = { low: 'lowest', avg: 'average', high: 'highest' };

const feedInput = z.object({
  feed_token: single('value').meta({
    description: "The account's feed token, as `deals_feed_url` in `GET /api/me` gives it; never the API token.",
    override: { type: 'string' },
  }),
  basis: basisParam,
  days: daysParam,
});

export const feedsPaths: ZodOpenApiPathsObject = {
  [DEALS_FEED_PATH]: {
    get: {
      tags: ['Account'],
      operationId: 'getDealsFeed',
      summary: "Deals among the account's own watched products, as an Atom feed",
      description:
        'For feed readers, which send no headers: the secret URL `GET /api/me` names as `deals_feed_url` is the credential. ' +
        `The ${FEED_ENTRIES} largest drops among the account's watched ASINs, in every country; a wrong or rotated token answers 404.`,
      requestParams: { query: feedInput },
      responses: {
        200: { description: 'An Atom 1.0 feed.', content: { 'application/atom+xml': { schema: z.string() } } },
        ...errors(404, 422, 429),
      },
    },
  },
};

function base(req: Request, appUrl: string | undefined): string {
  return appUrl ?? `${req.protocol}://${req.host}`;
}

/**
 * Text as HTML: the feed package writes titles and summaries as `type="html"`, so a product title
 * from the upstream (`<b>`, `&`, `]]>`) must be escaped to reach the reader as the text it is.
 */
function asHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function entryTitle(p: DealProduct, basis: DealBasis, days: DealWindow, drop: number): string {
  const price = p.price ? `${p.price.amount} ${p.price.currency}` : 'no price';
  return asHtml(`${p.title ?? p.asin} (${p.country}): ${price}, ${drop}% under its ${days}-day ${BASIS_WORDS[basis]}`);
}

/**
 * The deals feed: no account API token (feed readers cannot send one); the feed token in the URL
 * names the account and nothing else. Limited per client address, and its URL is logged with the
 * token redacted (loggable-url.ts).
 */
export function feedsRoutes(ctx: AppContext): Router {
  const router = Router();
  const tz = ctx.config.timeZone;
  router.get(DEALS_FEED_PATH, createRateLimiter(ctx, { name: 'feeds', limit: ctx.config.rateLimits.apiPerMinute }), async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const q = validate(feedInput, req.query);
    const user = q.feed_token ? await ctx.users.findByFeedToken(q.feed_token) : null;
    if (!user) throw new NotFoundError('No such feed.');
    const deals = await ctx.deals.forAccount(user._id, ctx.config.countries, { basis: q.basis, days: q.days }, FEED_ENTRIES);
    const origin = base(req, ctx.config.http.appUrl);
    const field = dealField(q.basis, q.days);
    const newest = deals.reduce<Date | null>((at, p) => (p.updated_at && (!at || p.updated_at > at) ? p.updated_at : at), null);
    const feed = new Feed({
      id: `${origin}${DEALS_FEED_PATH}#${user._id.toHexString()}`,
      title: `shelfwatch deals for ${user.name}`,
      description: `Watched products under their ${q.days}-day ${BASIS_WORDS[q.basis]} price`,
      link: origin,
      updated: newest ?? user.updated_at,
      generator: 'shelfwatch',
      // Atom requires an author on the feed when its entries have none.
      author: { name: 'shelfwatch' },
    });
    for (const p of deals) {
      const drop = p.drop[field] ?? 0;
      const at = p.updated_at ?? p.created_at;
      feed.addItem({
        id: `tag:shelfwatch,2026:deal/${p.country}/${p.asin}/${field}/${at.getTime()}`,
        title: entryTitle(p, q.basis, q.days, drop),
        link: p.url ?? `${origin}/api/world/asin/${p.asin}?country=${p.country}`,
        date: at,
        description: `As of ${formatDateTime(at, tz)} (${tz}).`,
      });
    }
    res.type('application/atom+xml; charset=utf-8').send(feed.atom1());
  });
  return router;
}
