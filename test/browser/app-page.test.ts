import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { SmtpReceiver } from '../helpers/smtp-receiver.js';
import { buildApp } from '../../src/app/http/app.js';
import { apiRoutes } from '../../src/app/http/api-routes.js';
import { listen, type RunningServer } from '../../src/lifecycle/http-server.js';
import { productModel } from '../../src/models/product.js';
import { historyPointModel } from '../../src/models/history-point.js';
import { endpointModel } from '../../src/models/endpoint.js';

/**
 * The account page (/app, web/app/) in headless Chromium against the real app on a port of its own:
 * a seeded account with a watched product, its history and an alert on a loopback receiver; then a
 * new account managed from the page as a person would, with axe-core checking each view.
 * Screenshots go to test/artifacts/ (gitignored); app-page-full.png is docs/images/app-page.png.
 */

// Debian's chromium (`apt-get install chromium`); CI installs it (.ci/run).
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveBrowser = existsSync(CHROMIUM);
if (!haveBrowser) console.warn(`test/browser skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
if (!haveBrowser && process.env.REQUIRE_BROWSER) throw new Error(`REQUIRE_BROWSER is set but ${CHROMIUM} does not exist`);

const ARTIFACTS = path.resolve(import.meta.dirname, '../artifacts');
const ASIN = 'B0PAGETST1';
const TITLE = 'Page test <b>kettle</b> & "friends"';
const DAY = 86_400_000;
/** Products and alerts besides the one the test looks at: an account page of 100 of each. */
const OTHERS = 99;
const otherAsin = (i: number) => `B0PAGE${String(i).padStart(4, '0')}`;

/** axe-core's browser build, evaluated in the page through the DevTools protocol: an inline script
 * tag (addScriptTag's content) would be refused by the page's own policy, which the test keeps on. */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The element with focus: its id, tag and text. */
function focused(page: Page): Promise<{ id: string; tag: string; text: string }> {
  return page.evaluate(() => {
    const doc = (
      globalThis as unknown as { document: { activeElement: { id: string; tagName: string; textContent: string | null } | null } }
    ).document;
    const node = doc.activeElement;
    return { id: node?.id ?? '', tag: node?.tagName ?? '', text: node?.textContent ?? '' };
  });
}

/** The serious and critical WCAG 2.1 A/AA and best-practice violations axe finds in what is shown. */
async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(AXE_SOURCE);
  const found = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: Violation[] }> } }).axe;
    type Violation = { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] };
    const result = await axe.run((globalThis as unknown as { document: unknown }).document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id} (${v.help}): ${v.targets.slice(0, 3).join(', ')}`);
}

describe.skipIf(!haveBrowser)('/app in a real browser', () => {
  let t: TestContext;
  let rx: WebhookReceiver;
  let smtp: SmtpReceiver;
  let server: RunningServer;
  let browser: Browser;
  let token: string;
  let alertId: string;

  beforeAll(async () => {
    rx = await new WebhookReceiver().start();
    rx.script('/hook', [202]);
    smtp = await new SmtpReceiver('page-mailer', 'page-pass').start();
    t = await createTestContext({
      COUNTRIES: 'JP',
      ENDPOINT_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_API: '0',
      SMTP_URL: `smtp://page-mailer:page-pass@127.0.0.1:${smtp.port}`,
      SMTP_FROM: 'Shelfwatch <alerts@shelfwatch.test>',
      APP_URL: 'https://shelfwatch.test',
    });
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
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await t?.close();
    await rx?.close();
    await smtp?.close();
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

  it('manages products, alerts, endpoints and the token as a person would, each view without serious accessibility violations', async () => {
    const { token: first } = await t.ctx.users.create({ name: 'Manager', email: 'manager@example.com' });
    rx.script('/manage', [202]);
    const context = await browser.newContext({ viewport: { width: 1000, height: 900 }, acceptDownloads: true });
    const page = await context.newPage();
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('console', (m) => {
      // A refused request is logged by the browser; the form's 422 below is one on purpose.
      if ((m.type() === 'error' || m.type() === 'warning') && !m.text().includes('422')) problems.push(m.text());
    });
    const status = page.locator('#status');
    const shot = (name: string, fullPage = false) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage });
    const accessible = async (view: string) => expect(await axeViolations(page), view).toEqual([]);

    await page.goto(`${server.url}/app/`);
    await accessible('signed out');
    await page.getByLabel('API token').fill(first);
    await page.getByLabel('API token').press('Enter');
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('Loaded.');
    expect((await focused(page)).id).toBe('products-heading');
    await accessible('signed in, empty');

    // Three products pasted at once: an ASIN, a JAN code (an import) and a browse node.
    const ASIN_NEW = 'B0MANAGE01';
    await page.getByLabel('Products to add').fill(`${ASIN_NEW}\n4901234567894\n2277721051\n`);
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('Added 3 of 3.');
    const imports = page.locator('#import-list li');
    expect(await imports.allTextContents()).toEqual([
      `ASIN ${ASIN_NEW}: added`,
      expect.stringMatching(/^JAN\/EAN 4901234567894: import (queued|resolving|done)/),
      'browse node 2277721051: added',
    ]);
    expect(await page.locator('#imports-progress').evaluate((n) => (n as unknown as { value: number }).value)).toBe(3);
    expect((await focused(page)).id).toBe('imports-heading');
    expect(await page.locator(`#product-list article[data-asin="${ASIN_NEW}"]`).count()).toBe(1);
    expect(await page.locator('#browse-list li[data-browse="2277721051"]').count()).toBe(1);
    await accessible('products added');
    await shot('app-products-added');

    // The product as a refresh would leave it, with a point in its history for the CSV file.
    await productModel(t.ctx.mongo).updateOne(
      { country: 'JP', asin: ASIN_NEW },
      { $set: { title: 'Electric Kettle 1.2 L', status: 'ok', price: { amount: 2480, currency: 'JPY' }, availability: 'in_stock' } },
    );
    const at = new Date(Math.floor((Date.now() - DAY) / 1000) * 1000);
    await historyPointModel(t.ctx.mongo).create({
      _id: `JP.${ASIN_NEW}.${at.getTime()}`,
      country: 'JP',
      asin: ASIN_NEW,
      at,
      price: 2480,
      currency: 'JPY',
      availability: 'in_stock',
      buybox: true,
      rank: 7,
      expires_at: new Date(at.getTime() + 365 * DAY),
    });

    // Two alerts on one product: a webhook below a price, and an e-mail on a 10 % drop to a new address.
    const form = page.locator('#alert-form');
    await form.getByLabel('ASIN').fill(ASIN_NEW);
    await form.getByLabel('When').selectOption('price_below');
    // The API's answer to a missing price shows in the form, on the field, which takes focus.
    await form.getByRole('button', { name: 'Create alert' }).click();
    await expect.poll(() => form.locator('.form-error').textContent(), { timeout: 30_000 }).not.toBe('');
    expect(await page.locator('#alert-price').getAttribute('aria-invalid')).toBe('true');
    expect((await focused(page)).id).toBe('alert-price');
    await accessible('alert form with an error');
    await form.getByLabel('Price').fill('1500');
    await form.getByLabel('Address (URL)').fill(`${rx.url}/manage`);
    await form.getByRole('button', { name: 'Create alert' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe(`Created the alert on ${ASIN_NEW}.`);
    const alerts = page.locator('#alert-list article');
    expect(await alerts.count()).toBe(1);
    const hookAlert = page.locator('#alert-list article', { hasText: `${rx.url}/manage` });
    expect((await focused(page)).tag).toBe('H3');

    await form.getByLabel('ASIN').fill(ASIN_NEW);
    await form.getByLabel('When').selectOption('price_drop');
    await form.getByLabel('By percent').fill('10');
    await form.getByLabel('Send by').selectOption('email');
    await form.getByLabel('E-mail address').fill('new-person@example.com');
    await accessible('alert form, e-mail');
    await form.getByRole('button', { name: 'Create alert' }).click();
    await expect
      .poll(() => status.textContent(), { timeout: 30_000 })
      .toMatch(/^Created the alert on B0MANAGE01\. A confirmation link was mailed to new-person@example\.com/);
    expect(await alerts.count()).toBe(2);
    const mailAlert = page.locator('#alert-list article', { hasText: 'new-person@example.com' });
    expect(await mailAlert.locator('.state').textContent()).toContain('pending confirmation');
    // The e-mail's endpoint is pending confirmation; the webhook's is active.
    const endpoints = page.locator('#endpoint-list article');
    expect(await endpoints.count()).toBe(2);
    expect(await endpoints.filter({ hasText: 'new-person@example.com' }).locator('.state').textContent()).toMatch(
      /^active · address pending confirmation/,
    );
    expect(await endpoints.filter({ hasText: `${rx.url}/manage` }).getAttribute('data-state')).toBe('active');
    await accessible('two alerts');
    await shot('app-alerts');

    // Test the webhook alert: its receiver answers 202.
    await hookAlert.getByRole('button', { name: 'Test' }).click();
    await expect
      .poll(() => hookAlert.locator('.result').textContent(), { timeout: 30_000 })
      .toMatch(/^Test delivered \(HTTP 202\)( in \d+ ms)?\.$/);
    expect(rx.at('/manage')).toHaveLength(1);
    await shot('app-page-full', true);

    // Pause the e-mail alert: focus stays on its button, now Resume.
    await mailAlert.getByRole('button', { name: 'Pause' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe(`Paused the alert on ${ASIN_NEW}.`);
    expect(await mailAlert.locator('.state').textContent()).toMatch(/^paused/);
    expect((await focused(page)).text).toBe('Resume');

    // Edit the e-mail alert's threshold: the page posts the new alert and deletes the old one.
    await mailAlert.getByRole('button', { name: 'Edit' }).click();
    expect(await page.locator('#alert-form-heading').textContent()).toBe(`Edit the alert on ${ASIN_NEW} (JP)`);
    expect((await focused(page)).id).toBe('alert-asin');
    expect(await form.getByLabel('E-mail address').inputValue()).toBe('new-person@example.com');
    await form.getByLabel('By percent').fill('15');
    await form.getByRole('button', { name: 'Save the alert' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toMatch(/^Saved the alert on B0MANAGE01\./);
    expect(await alerts.count()).toBe(2);
    expect(await mailAlert.locator('h3').textContent()).toBe(`${ASIN_NEW} (JP): price drops by 15 %`);
    expect(await mailAlert.locator('.state').textContent()).toMatch(/^paused · address pending confirmation/);

    // Delete the webhook alert: its endpoint, now unused, goes with it.
    await hookAlert.getByRole('button', { name: 'Delete' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe(`Deleted the alert on ${ASIN_NEW}.`);
    expect(await alerts.count()).toBe(1);
    expect(await endpoints.count()).toBe(1);

    // An endpoint the service disabled shows why, and comes back with Re-enable.
    await endpointModel(t.ctx.mongo).updateMany(
      { url: 'mailto:new-person@example.com' },
      { $set: { disabled_at: new Date(), disabled_reason: 'the mail server refused mail permanently' } },
    );
    await page.reload();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('Loaded.');
    expect(await endpoints.first().locator('.state').textContent()).toMatch(/^disabled since .+: the mail server refused mail permanently/);
    await accessible('endpoint disabled');
    await endpoints.first().getByRole('button', { name: 'Re-enable' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toMatch(/^Re-enabled E-mail: new-person@example\.com\.$/);
    expect(await endpoints.first().getAttribute('data-state')).toBe('active');

    // The product's history as a CSV file.
    const product = page.locator(`#product-list article[data-asin="${ASIN_NEW}"]`);
    const [download] = await Promise.all([page.waitForEvent('download'), product.getByRole('button', { name: 'Download CSV' }).click()]);
    expect(download.suggestedFilename()).toBe(`${ASIN_NEW}-JP-history.csv`);
    const csv = await readFile((await download.path())!, 'utf8');
    expect(csv.split('\r\n')[0]).toBe('at,price,currency,availability,buybox,rank');
    expect(csv.split('\r\n')[1]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},2480,JPY,in_stock,true,7$/);

    // Remove the browse node.
    await page.locator('#browse-list li[data-browse="2277721051"]').getByRole('button', { name: 'Remove' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('Stopped watching browse node 2277721051.');
    expect(await page.locator('#browse-list li').count()).toBe(0);

    // Rotate the token: the page goes on with the new one, the old one is refused.
    await page.getByRole('button', { name: 'Rotate the token' }).click();
    expect(await page.locator('#token-form .form-error').textContent()).toMatch(/^Tick the box first/);
    await page.getByLabel('I want the old token to stop working').check();
    await page.getByRole('button', { name: 'Rotate the token' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toMatch(/^Rotated the token/);
    const rotated = await page.getByLabel('New token (this tab uses it already)').inputValue();
    expect(rotated).not.toBe(first);
    expect(await page.evaluate(() => sessionStorage.getItem('shelfwatch.token'))).toBe(rotated);
    expect((await fetch(`${server.url}/api/me/summary`, { headers: { Authorization: `Bearer ${first}` } })).status).toBe(401);
    await accessible('token rotated');
    await page.reload();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('Loaded.');

    // Numbers and dates in the browser's locale: Japanese.
    const ja = await browser.newContext({ viewport: { width: 1000, height: 900 }, locale: 'ja-JP' });
    const jaPage = await ja.newPage();
    await jaPage.goto(`${server.url}/app/`);
    await jaPage.getByLabel('API token').fill(rotated);
    await jaPage.getByLabel('API token').press('Enter');
    await expect.poll(() => jaPage.locator('#status').textContent(), { timeout: 30_000 }).toBe('Loaded.');
    const cells = jaPage.locator(`#product-list article[data-asin="${ASIN_NEW}"] tbody tr`).first().locator('td');
    expect(await cells.nth(0).textContent()).toMatch(/^\d{4}\/\d{2}\/\d{2} \d{1,2}:\d{2}$/);
    expect(await cells.nth(1).textContent()).toMatch(/^[¥￥]2,480$/);
    await ja.close();

    expect(requested.filter((u) => !u.startsWith(server.url) && !u.startsWith('blob:'))).toEqual([]);
    expect(requested.filter((u) => u.includes(first) || u.includes(rotated))).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
