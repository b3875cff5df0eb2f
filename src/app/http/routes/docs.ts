import { createRequire } from 'node:module';
import path from 'node:path';
import { Router } from 'express';
import type { AppContext } from '../../context.js';
import { buildOpenApiDocument } from '../openapi/document.js';

/** The files of swagger-ui-dist the page loads: served from the installed package, never a CDN. */
const ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css',
  'swagger-ui-bundle.js': 'text/javascript',
  'favicon-32x32.png': 'image/png',
};
const assetDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

// Relative addresses, so the page works behind a proxy that mounts the service under a prefix.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>shelfwatch API</title>
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/assets/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null: Swagger UI would otherwise send the document to an online validator.
const INIT = `window.ui = SwaggerUIBundle({ url: 'openapi.json', dom_id: '#swagger-ui', deepLinking: true, validatorUrl: null });\n`;

// The API's own policy is `default-src 'none'`; the page needs its scripts, styles and the document.
const PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'";

/** `/openapi.json`, and `/docs`: Swagger UI rendering it, from the package's own files. */
export function docsRoutes(ctx: Pick<AppContext, 'config'>): Router {
  const router = Router();
  const document = JSON.stringify(buildOpenApiDocument(ctx.config));
  const page = (res: Parameters<Parameters<typeof router.get>[1]>[1]) => res.set('Content-Security-Policy', PAGE_POLICY);

  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(document);
  });
  router.get('/docs', (_req, res) => {
    page(res).type('text/html').send(PAGE);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('text/javascript').send(INIT);
  });
  // Mounted rather than routed: the page's static files are not operations of the API.
  router.use('/docs/assets', (req, res, next) => {
    const name = req.path.slice(1);
    const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (!type) return next();
    res.type(type).set('Cache-Control', 'public, max-age=86400').sendFile(path.join(assetDir, name));
  });
  return router;
}
