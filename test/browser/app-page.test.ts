import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { buildApp } from '../../src/app/http/app.js';
import { apiRoutes } from '../../src/app/http/api-routes.js';
import { listen, type RunningServer } from '../../src/lifecycle/http-server.js';
import { productModel } from '../../src/models/product.js';
import { historyPointModel } from '../../src/models/history-point.js';
import { ARTIFACTS, DAY, axeViolations, haveBrowser, launchBrowser } from './page-helpers.js';

/**
 * The account page (/app, web/app/) in headless Chromium against the real app on a port of its own:
 * a seeded account with a watched product, its history and an alert on a loopback receiver.
 * Screenshots go to test/artifacts/ (gitignored). What the page manages is app-manage.test.ts.
 */

const ASIN = 'B0PAGETST1';
const TITLE = 'Page test <b>kettle</b> & "friends"';
/** Products and alerts besides the one the test looks at: an account page of 100 of each. */
const OTHERS = 99;
const otherAsin = (i: number) => `B0PAGE${String(i).padStart(4, '0')}`;

describe.skipIf(!haveBrowser)('/app in a real browser', () => {
  let t: TestContext;
  let rx: WebhookReceiver;
  let server: RunningServer;
  let browser: Browser;
  let token: string;
  let alertId: string;

  beforeAll(async () => {
    rx = await new WebhookReceiver().start();
    rx.script('/hook', [202]);
    t = await createTestContext({ COUNTRIES: 'JP', ENDPOINT_ALLOW_PRIVATE: 'true', RATE_LIMIT_API: '0' });
    server = await listen(buildApp(t.ctx, apiRoutes), 0, '127.0.0.1');
    ({ token } = await t.ctx.users.create({ name: 'Page Tester', email: 'page@example.com' }));
    const call = async (method: string, url: string, body?: unknown) => {
      const res = await fetch(`${server.url}${url}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect(res.status, `${method} ${url}: ${await res.clone().text()}`).toBeLessThan(300);
      return res.json();
    };
    // Watched and alerted first, so the test's own product and alert are the newest (at the top).
    for (let i = 0; i < OTHERS; i++) await call('POST', '/api/watch/asin', { asin: otherAsin(i) });
    for (let i = 0; i < OTHERS; i++)
      await call('POST', '/api/alerts', { asin: otherAsin(i), country: 'JP', kind: 'back_in_stock', webhook_url: `${rx.url}/other` });
    await call('POST', '/api/watch/asin', { asin: ASIN });
    const now = Date.now();
    await productModel(t.ctx.mongo).updateOne(
      { country: 'JP', asin: ASIN },
      {
        $set: {
          title: TITLE,
          status: 'ok',
          price: { amount: 1980, currency: 'JPY' },
          availability: 'in_stock',
          updated_at: new Date(now - DAY),
        },
      },
    );
    const points: [number, number | null, string][] = [
      [20, 2480, 'in_stock'],
      [12, 2200, 'in_stock'],
      [6, null, 'out_of_stock'],
      [1, 1980, 'in_stock'],
    ];
    await historyPointModel(t.ctx.mongo).insertMany(
      points.map(([daysAgo, price, availability]) => {
        const at = new Date(Math.floor((now - daysAgo * DAY) / 1000) * 1000);
        return {
          _id: `JP.${ASIN}.${at.getTime()}`,
          country: 'JP',
          asin: ASIN,
          at,
          price,
          currency: price === null ? null : 'JPY',
          availability,
          buybox: price !== null,
          rank: 42,
          expires_at: new Date(at.getTime() + 365 * DAY),
        };
      }),
    );
    alertId = (
      (await call('POST', '/api/alerts', {
        asin: ASIN,
        country: 'JP',
        kind: 'price_below',
        price: 1500,
        webhook_url: `${rx.url}/hook`,
      })) as {
        data: { id: string };
      }
    ).data.id;
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await t?.close();
    await rx?.close();
  });

  it('signs in with a pasted token, loads 100 products and 100 alerts in a few requests, fetches charts as they come into view, and tests the alert', async () => {
    const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    const page = await context.newPage();
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
    });

    // /app redirects to /app/; the page carries its own policy.
    const response = await page.goto(`${server.url}/app`);
    expect(page.url()).toBe(`${server.url}/app/`);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.screenshot({ path: path.join(ARTIFACTS, 'app-signed-out.png'), fullPage: true });

    // The label names the input; keyboard only: type, Enter submits.
    await page.getByLabel('API token').fill(token);
    await page.getByLabel('API token').press('Enter');
    await expect.poll(() => page.locator('#status').textContent(), { timeout: 30_000 }).toBe('Loaded.');
    // The page's data is one request, whatever the account holds; charts come one per product in view.
    const api = requested.filter((u) => u.startsWith(`${server.url}/api/`));
    const charts = () => requested.filter((u) => u.includes('/history.svg')).length;
    expect(api.filter((u) => !u.includes('/history.svg')).length).toBeLessThanOrEqual(5);
    expect(await page.locator('#product-list article').count()).toBe(OTHERS + 1);
    expect(await page.locator('#alert-list article').count()).toBe(OTHERS + 1);
    await expect.poll(() => charts(), { timeout: 30_000 }).toBeGreaterThan(0);
    const inView = charts();
    expect(inView).toBeLessThan(10);
    expect(await page.evaluate(() => sessionStorage.getItem('shelfwatch.token'))).toBe(token);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect((await context.cookies()).length).toBe(0);

    // The product, its title as text (not markup).
    const product = page.locator(`article[data-asin="${ASIN}"]`);
    await expect.poll(() => product.count()).toBe(1);
    expect(await product.locator('h3').textContent()).toBe(`${TITLE} (${ASIN}, JP)`);
    expect(await product.locator('h3 b').count()).toBe(0);

    // The chart: fetched with the token, shown through a blob: URL, loaded.
    const chart = product.locator('img.chart');
    await expect
      .poll(
        () =>
          chart.evaluate((node) => {
            const img = node as unknown as { complete: boolean; naturalWidth: number };
            return img.complete ? img.naturalWidth : 0;
          }),
        { timeout: 30_000 },
      )
      .toBeGreaterThan(0);
    expect(await chart.getAttribute('src')).toMatch(/^blob:/);
    expect(await chart.getAttribute('alt')).toContain('over the last 30 days');

    // Recent changes, newest first.
    const rows = product.locator('tbody tr');
    expect(await rows.count()).toBe(4);
    expect(await rows.first().locator('td').nth(1).textContent()).toMatch(/1,980/);
    expect(await rows.nth(1).locator('td').nth(2).textContent()).toBe('out_of_stock');

    // The alert, without deliveries yet; Test shows what the receiver answered. (Screenshots show the
    // view only: a full-page one would bring every chart into view.)
    const alert = page.locator(`article[data-alert="${alertId}"]`);
    await expect.poll(() => alert.count()).toBe(1);
    expect(await alert.textContent()).toContain('No deliveries yet.');
    await page.screenshot({ path: path.join(ARTIFACTS, 'app-signed-in.png') });
    expect(await axeViolations(page), 'a page of 100 products and 100 alerts').toEqual([]);
    const test = alert.getByRole('button', { name: 'Test' });
    await test.focus();
    await page.keyboard.press('Enter');
    await expect
      .poll(() => alert.locator('.result').textContent(), { timeout: 30_000 })
      .toMatch(/^(Receiver answered HTTP 202 in \d+ ms: OK|Test delivered \(HTTP 202\)( in \d+ ms)?)\.$/);
    expect(rx.at('/hook')).toHaveLength(1);
    await page.screenshot({ path: path.join(ARTIFACTS, 'app-alert-tested.png') });

    // Scrolled to the end, the products there fetch their charts; those scrolled past stay fetched.
    const before = charts();
    await page.locator('#product-list article').last().scrollIntoViewIfNeeded();
    await expect.poll(() => charts(), { timeout: 30_000 }).toBeGreaterThan(before);
    expect(charts()).toBeLessThan(OTHERS + 1);

    // Sign out clears the token.
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await page.evaluate(() => sessionStorage.getItem('shelfwatch.token'))).toBeNull();
    expect(await page.locator('#products').isHidden()).toBe(true);
    expect(await page.locator('article').count()).toBe(0);

    // Nothing from elsewhere, and nothing the policy blocked.
    expect(requested.filter((u) => !u.startsWith(server.url) && !u.startsWith('blob:'))).toEqual([]);
    expect(problems).toEqual([]);
    // The token never went into an address.
    expect(requested.filter((u) => u.includes(token))).toEqual([]);
    await context.close();
  });
});
