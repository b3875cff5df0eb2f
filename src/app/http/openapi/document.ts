import { createDocument } from 'zod-openapi';
import type { Config } from '../../../../config/env.js';
import { VERSION } from '../../../version.js';
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { json, SECURITY_SCHEMES, unreadable } from './responses.js';
import { versionPaths } from '../routes/version.js';
import { healthPaths } from '../routes/health.js';
import { metricsPaths } from '../routes/metrics.js';
import { directoryPaths } from '../routes/directory.js';
import { mePaths } from '../routes/me.js';
import { summaryPaths } from '../routes/summary.js';
import { watchPaths } from '../routes/watch.js';
import { worldPaths } from '../routes/world.js';
import { dealsPaths } from '../routes/deals.js';
import { feedsPaths } from '../routes/feeds.js';
import { historyChartPaths } from '../routes/history-chart.js';
import { forcedUpdatePaths } from '../routes/forced-update.js';
import { alertsPaths } from './alerts.js';
import { webhooksPaths } from '../routes/webhooks.js';
import { deliveriesPaths } from '../routes/deliveries.js';
import { emailLinkPaths } from '../routes/email-links.js';
import { deliveryWebhooks } from './webhooks.js';

/** The document itself and its page (src/app/http/routes/docs.ts). */
export const docsPaths: ZodOpenApiPathsObject = {
  '/openapi.json': {
    get: {
      tags: ['Operations'],
      operationId: 'openapi',
      summary: 'This document',
      responses: { 200: json('The OpenAPI 3.1 document.', z.record(z.string(), z.unknown())), ...unreadable() },
    },
  },
  '/docs': {
    get: {
      tags: ['Operations'],
      operationId: 'docs',
      summary: 'This document as a page (Swagger UI)',
      responses: { 200: { description: 'An HTML page.', content: { 'text/html': { schema: z.string() } } }, ...unreadable() },
    },
  },
  '/docs/init.js': {
    get: {
      tags: ['Operations'],
      operationId: 'docsScript',
      summary: "The page's start-up script",
      responses: { 200: { description: 'JavaScript.', content: { 'text/javascript': { schema: z.string() } } }, ...unreadable() },
    },
  },
};

const DESCRIPTION = `A product-tracking daemon: account holders watch retail products (ASINs, JAN/EAN codes,
browse nodes) and shelfwatch keeps a per-country catalogue of them fresh from an upstream retail API,
within that API's quota.

- **The version query** answers the engine version.
- **The account API** (\`/api/me\`, \`/api/watch…\`, \`/api/world…\`, \`/api/alerts…\`, \`/api/webhooks…\`,
  \`/api/deliveries…\`, \`/api/events…\`) needs the account's API token: as
  \`Authorization: Bearer <token>\`, as \`api_token\` in the query, or as \`api_token\` in a POST body.
- **The public directory** (\`/api/user\`, \`/api/post\`) is public, CORS-enabled and rate limited.

Errors answer \`{"message": …}\`, and on 422 also \`"errors": {field: [messages]}\`. Dates are
\`YYYY-MM-DD HH:MM:SS\` in the server's APP_TIMEZONE. Bull Board, the queues' page, is at
\`/admin/queues\` behind HTTP Basic credentials when the operator configured them.`;

export type OpenApiDocument = ReturnType<typeof createDocument>;

/**
 * The OpenAPI 3.1 document of this instance, built by zod-openapi from the schemas the routes
 * validate with and answer in; the configuration decides what varies (the countries served, the
 * public URL).
 */
export function buildOpenApiDocument(config: Pick<Config, 'countries' | 'timeZone' | 'http' | 'alerts'>): OpenApiDocument {
  return createDocument({
    openapi: '3.1.0',
    info: { title: 'shelfwatch', version: VERSION, description: DESCRIPTION, license: { name: 'MIT', identifier: 'MIT' } },
    ...(config.http.appUrl ? { servers: [{ url: config.http.appUrl }] } : {}),
    tags: [
      { name: 'Version' },
      { name: 'Account' },
      { name: 'Watchlist' },
      { name: 'World catalogue' },
      { name: 'Alerts', description: 'Alerts, the webhook endpoints they deliver to, the deliveries, and the account’s events.' },
      {
        name: 'E-mail links',
        description: 'The pages of the links e-mails carry: confirm an address (double opt-in), unsubscribe it (RFC 8058). No API token.',
      },
      { name: 'Public directory' },
      { name: 'Operations', description: 'Health, metrics and this document.' },
    ],
    paths: {
      ...versionPaths,
      ...mePaths,
      ...summaryPaths,
      ...watchPaths,
      ...worldPaths(config),
      ...dealsPaths(config),
      ...feedsPaths,
      ...historyChartPaths(config),
      ...forcedUpdatePaths(config),
      ...alertsPaths(config),
      ...webhooksPaths,
      ...deliveriesPaths,
      ...emailLinkPaths,
      ...directoryPaths,
      ...healthPaths,
      ...metricsPaths,
      ...docsPaths,
    },
    webhooks: deliveryWebhooks(config),
    components: { securitySchemes: SECURITY_SCHEMES },
  });
}
