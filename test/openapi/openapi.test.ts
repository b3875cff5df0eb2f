import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Express } from 'express';
import { Validator } from '@seriousme/openapi-schema-validator';
import { chromium } from 'playwright-core';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { runCli } from '../helpers/cli.js';
import { buildApp } from '../../src/app/http/app.js';
import { apiRoutes } from '../../src/app/http/api-routes.js';
import { listen, type RunningServer } from '../../src/lifecycle/http-server.js';
import { buildOpenApiDocument } from '../../src/app/http/openapi/document.js';
import { OpenApiChecker } from '../helpers/openapi-check.js';

interface RouteLayer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  slash?: boolean;
  handle?: { stack?: RouteLayer[] };
}

/**
 * Every operation express serves: routes of the app and of the routers mounted at its root. Routers
 * mounted under a path (Bull Board, the docs page's static files) serve pages, not operations;
 * `all` and OPTIONS handlers answer for paths that have operations (405s, CORS preflights).
 */
function registeredOperations(app: Express): string[] {
  const out = new Set<string>();
  const walk = (stack: readonly RouteLayer[]): void => {
    for (const layer of stack) {
      if (layer.route) {
        for (const path of [layer.route.path].flat()) {
          for (const method of Object.keys(layer.route.methods)) {
            if (!['_all', 'options', 'head'].includes(method)) out.add(`${method.toUpperCase()} ${path}`);
          }
        }
      } else if (layer.slash && layer.handle?.stack) {
        walk(layer.handle.stack);
      }
    }
  };
  walk((app as unknown as { router: { stack: RouteLayer[] } }).router.stack);
  return [...out].sort();
}

function documentedOperations(doc: ReturnType<typeof buildOpenApiDocument>): string[] {
  return Object.entries(doc.paths ?? {})
    .flatMap(([path, item]) => Object.keys(item as object).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`))
    .sort();
}

// A board for the route walk to see (and skip): it is mounted under its own path.
const t: TestContext = await createTestContext({ BULL_BOARD_USER: 'admin', BULL_BOARD_PASSWORD: 'a-board-password' });
const doc = buildOpenApiDocument(t.config);

afterAll(() => t.close());

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('has every route express serves, and nothing else', () => {
    const app = buildApp(t.ctx, apiRoutes);
    const registered = registeredOperations(app);
    expect(registered).toContain('GET /api/world/asin/:asin');
    expect(registered).toContain('POST /api/world/update');
    expect(documentedOperations(doc)).toEqual(registered);
  });

  it('is what GET /openapi.json answers and `shelfwatch openapi` prints', async () => {
    const res = await t.http
      .get('/openapi.json')
      .expect(200)
      .expect('Content-Type', /application\/json/);
    expect(res.body).toEqual(JSON.parse(JSON.stringify(doc)));
    const cli = await runCli(['openapi'], { COUNTRIES: t.config.countries.join(',') });
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toEqual(res.body);
  });

  it('names both ways of giving the token, and the error answers with their headers', () => {
    const world = doc.paths?.['/api/world']?.get;
    expect(world?.security).toEqual([{ bearerToken: [] }, { queryToken: [] }]);
    expect(doc.components?.securitySchemes).toMatchObject({
      bearerToken: { type: 'http', scheme: 'bearer' },
      queryToken: { type: 'apiKey', in: 'query', name: 'api_token' },
    });
    expect(Object.keys(world?.responses ?? {})).toEqual(expect.arrayContaining(['200', '401', '422', '429', '503']));
    expect(Object.keys(doc.paths?.['/api/watch/asin']?.post?.responses ?? {})).toContain('413');
    const responses = doc.components?.responses ?? {};
    expect(responses.TooManyRequests).toMatchObject({ headers: { 'Retry-After': { required: true } } });
    expect(responses.Unavailable).toMatchObject({ headers: { 'Retry-After': { required: true } } });
    expect(responses.Invalid).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidationError' } } },
    });
  });

  it('documents the history as CSV: its own path, and a second content type of the JSON route', () => {
    const contentTypes = (response: unknown) => Object.keys((response as { content?: object } | undefined)?.content ?? {});
    const csv = doc.paths?.['/api/world/asin/{asin}/history.csv']?.get;
    expect(contentTypes(csv?.responses?.['200'])).toEqual(['text/csv']);
    expect(csv?.description).toMatch(/`page` and `limit` do not apply/);
    expect(csv?.parameters?.map((p) => ('name' in p ? p.name : undefined))).toEqual(['asin', 'country', 'since', 'until']);
    expect(Object.keys(csv?.responses ?? {})).toEqual(expect.arrayContaining(['401', '404', '422', '429']));
    expect(contentTypes(doc.paths?.['/api/world/asin/{asin}/history']?.get?.responses?.['200'])).toEqual(['application/json', 'text/csv']);
  });

  it('lists the configured countries only', async () => {
    const jp = buildOpenApiDocument({ ...t.config, countries: ['JP'] });
    const country = jp.paths?.['/api/world/update']?.get?.parameters?.find((p) => 'name' in p && p.name === 'country');
    expect(country).toMatchObject({ schema: { enum: ['JP'], default: 'JP' } });
  });
});

describe('the answer check', () => {
  // The suite's answers are checked against the document (test/helpers/openapi-check.ts); it must
  // be able to fail.
  const checker = new OpenApiChecker(doc);
  const answer = { method: 'GET', url: '/api/watch?page=1', contentType: 'application/json; charset=utf-8' };

  it('refuses a body that breaks the schema, an undocumented status and a non-error 404', () => {
    const page = {
      data: [],
      links: { first: 'x', last: 'x', prev: null, next: null },
      meta: { current_page: 1, from: null, last_page: 1, links: [], path: 'x', per_page: 50, to: null, total: 0 },
    };
    expect(checker.check({ ...answer, status: 200, body: JSON.stringify(page) })).toBeUndefined();
    expect(checker.check({ ...answer, status: 200, body: JSON.stringify({ ...page, meta: { ...page.meta, total: '0' } }) })).toMatch(
      /total/,
    );
    expect(checker.check({ ...answer, status: 418, body: '{"message":"x"}' })).toMatch(/status not documented/);
    expect(checker.check({ ...answer, url: '/nowhere', status: 404, body: '{"error":"x"}' })).toMatch(/message/);
    expect(checker.check({ ...answer, status: 422, body: '{"message":"x"}' })).toMatch(/errors/);
  });

  it('matches a path as express routes it, dot segments and all', () => {
    const invalid = JSON.stringify({ message: 'x', errors: { ean: ['x'] } });
    expect(checker.check({ ...answer, url: '/api/world/ean/.?search=1', status: 422, body: invalid })).toBeUndefined();
    expect(checker.check({ ...answer, url: '/api/world/ean/..', status: 422, body: invalid })).toBeUndefined();
  });
});

// Debian's chromium; CI installs it (.ci/run) and sets REQUIRE_BROWSER so the test cannot skip there.
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveBrowser = existsSync(CHROMIUM);
if (!haveBrowser && process.env.REQUIRE_BROWSER) throw new Error(`REQUIRE_BROWSER is set but ${CHROMIUM} does not exist`);

describe.skipIf(!haveBrowser)('/docs in a real browser', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await listen(buildApp(t.ctx, apiRoutes), 0, '127.0.0.1');
  });
  afterAll(() => server?.close());

  it('renders every operation of the document, from files the service serves itself', async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage();
      const requested: string[] = [];
      const problems: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`${server.url}/docs`);
      // Swagger UI draws the document's webhooks (the deliveries to receivers) as operations too.
      const operations = documentedOperations(doc).length + Object.keys(doc.webhooks ?? {}).length;
      // A locator, not waitForFunction with a string: Playwright polls a string with eval, which
      // the page's CSP refuses once the first check comes too early.
      await page
        .locator('.opblock')
        .nth(operations - 1)
        .waitFor({ state: 'attached', timeout: 30_000 });
      expect(await page.locator('.opblock').count()).toBe(operations);
      expect(await page.locator('.opblock-summary-path', { hasText: '/api/world/update' }).count()).toBe(2);
      expect(await page.locator('.info .title').first().textContent()).toContain('shelfwatch');
      expect(problems).toEqual([]);
      // Nothing from a CDN: every request the page made went to this server.
      expect(requested.filter((u) => !u.startsWith(server.url))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
