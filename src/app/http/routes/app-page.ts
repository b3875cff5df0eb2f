import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { Router } from 'express';
import type { AppContext } from '../../context.js';

/**
 * `/app`: the account page (web/app/ at the repo root: plain HTML, CSS and ES modules, no build
 * step). This module is src/app/http/routes/ under tsx and dist/src/app/http/routes/ once compiled,
 * one level deeper; the folder is looked for from both (the Dockerfile copies web/ beside dist/).
 */
const here = path.dirname(fileURLToPath(import.meta.url));
export const APP_PAGE_DIR: string | undefined = [
  path.resolve(here, '../../../../web/app'),
  path.resolve(here, '../../../../../web/app'),
].find((dir) => existsSync(path.join(dir, 'index.html')));

// The API's own policy is `default-src 'none'` (app.ts); the page needs its own files, the API
// (connect-src) and the charts, shown through blob: URLs. No inline script or style anywhere, and no
// form submits anywhere (the token must never end up in a URL).
export const APP_PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; " +
  "form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/** Mounted rather than routed: the page's files are not operations of the API (test/openapi). */
export function appPageRoutes(ctx: Pick<AppContext, 'logger'>): Router {
  const router = Router();
  if (!APP_PAGE_DIR) {
    ctx.logger.warn('web/app/ not found beside src/ or dist/: /app is not served');
    return router;
  }
  const files = express.static(APP_PAGE_DIR, {
    index: 'index.html',
    redirect: false,
    dotfiles: 'ignore',
    fallthrough: true,
    setHeaders(res, file) {
      // The page is revalidated every time (so a deploy shows at once); its files are kept 5 minutes.
      res.setHeader('Cache-Control', file.endsWith('.html') ? 'no-cache' : 'public, max-age=300');
    },
  });
  router.use('/app', (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    // `/app` → `app/` (relative, so it works under a proxy's prefix): the page's own addresses are relative.
    if (req.originalUrl.split('?')[0] === '/app') return res.redirect(301, 'app/');
    res.set('Content-Security-Policy', APP_PAGE_POLICY);
    files(req, res, next);
  });
  return router;
}
