import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { SmtpReceiver } from '../helpers/smtp-receiver.js';
import { buildApp } from '../../src/app/http/app.js';
import { apiRoutes } from '../../src/app/http/api-routes.js';
import { listen, type RunningServer } from '../../src/lifecycle/http-server.js';
import { productModel } from '../../src/models/product.js';
import { historyPointModel } from '../../src/models/history-point.js';
import { endpointModel } from '../../src/models/endpoint.js';
import { ARTIFACTS, DAY, axeViolations, focused, haveBrowser, launchBrowser } from './page-helpers.js';

/**
 * The account page managing what the API manages (issue #39), driven in headless Chromium as a
 * person would, against the real app on a port of its own, with axe-core checking each view.
 * Screenshots go to test/artifacts/ (gitignored); app-page-full.png is docs/images/app-page.png.
 */

describe.skipIf(!haveBrowser)('/app managing an account in a real browser', () => {
  let t: TestContext;
  let rx: WebhookReceiver;
  let smtp: SmtpReceiver;
  let server: RunningServer;
  let browser: Browser;

  beforeAll(async () => {
    rx = await new WebhookReceiver().start();
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
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await t?.close();
    await rx?.close();
    await smtp?.close();
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
      // A refused request is logged by the browser; the 422 and 409 below are on purpose.
      if ((m.type() === 'error' || m.type() === 'warning') && !/\b(422|409)\b/.test(m.text())) problems.push(m.text());
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
    // An endpoint an alert uses is not deleted: the API's answer shows beside it.
    await endpoints.first().getByRole('button', { name: 'Delete' }).click();
    await expect
      .poll(() => endpoints.first().locator('.result').textContent(), { timeout: 30_000 })
      .toMatch(/^The endpoint is used by 1 alert/);
    expect(await endpoints.count()).toBe(1);

    // How the e-mail endpoint takes its alerts: a daily digest without its time is refused beside
    // the field; an hourly digest with quiet hours is kept, and shown after a reload.
    const mailEndpoint = endpoints.first();
    await mailEndpoint.locator('summary').click();
    await mailEndpoint.getByLabel('Send', { exact: true }).selectOption('daily');
    await mailEndpoint.getByRole('button', { name: 'Save delivery' }).click();
    await expect
      .poll(() => mailEndpoint.locator('.field-error').first().textContent(), { timeout: 30_000 })
      .toMatch(/required when delivery is daily/);
    expect((await focused(page)).id).toMatch(/-digest-at$/);
    await mailEndpoint.getByLabel('Send', { exact: true }).selectOption('hourly');
    await mailEndpoint.getByLabel('Quiet hours: hold alerts, then send them in one digest').check();
    await mailEndpoint.getByLabel('Quiet from').fill('22:00');
    await mailEndpoint.getByLabel('Quiet until').fill('07:00');
    await mailEndpoint.getByRole('button', { name: 'Save delivery' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('Saved how E-mail: new-person@example.com takes its alerts.');
    await page.reload();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('Loaded.');
    expect(await endpoints.first().locator('summary').textContent()).toBe('Delivery: an hourly digest · quiet 22:00–07:00');
    await endpoints.first().locator('summary').click();
    await accessible('endpoint delivery');

    // The account's time zone, and its deals feed under a secret address that can be renewed.
    const zone = page.getByLabel('Time zone (IANA name)');
    await expect.poll(() => zone.inputValue(), { timeout: 30_000 }).not.toBe('');
    await zone.fill('Mars/Olympus');
    await page.getByRole('button', { name: 'Save the time zone' }).click();
    await expect.poll(() => page.locator('#zone-form .field-error').textContent(), { timeout: 30_000 }).toMatch(/IANA time zone/);
    await zone.fill('Asia/Tokyo');
    await page.getByRole('button', { name: 'Save the time zone' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('Saved the time zone: Asia/Tokyo.');
    const feedAt = (address: string) => {
      const u = new URL(address);
      return fetch(`${server.url}${u.pathname}${u.search}`);
    };
    const feed = await page.getByLabel('Feed address').inputValue();
    expect(feed).toMatch(/\/api\/feeds\/deals\.atom\?feed_token=/);
    expect((await feedAt(feed)).status).toBe(200);
    await page.getByRole('button', { name: 'New feed address' }).click();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('Made a new feed address: the old one no longer works.');
    const renewed = await page.getByLabel('Feed address').inputValue();
    expect(renewed).not.toBe(feed);
    expect((await feedAt(feed)).status).toBe(404);
    const atom = await feedAt(renewed);
    expect(atom.status).toBe(200);
    expect(atom.headers.get('content-type')).toMatch(/^application\/atom\+xml/);
    await accessible('account settings');

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
