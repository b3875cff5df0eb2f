import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver, type Received } from '../helpers/webhook-receiver.js';
import { until } from '../helpers/until.js';
import { changeOf, deliveriesOf, startTestDeliveryWorker, testAccount, type TestDeliveryWorker } from '../helpers/deliveries.js';
import { productModel } from '../../src/models/product.js';

/**
 * ntfy and Telegram alerts through the real delivery queue and worker, a loopback receiver standing
 * in for an ntfy server and for the Bot API (TELEGRAM_API_URL): the requests as the services
 * document them, their error answers judged (gone: disabled at once; else retried, a 429 after the
 * wait it asked for), and the credentials never in an answer, a record, a job or a log line.
 */
let t: TestContext;
let rx: WebhookReceiver;
let worker: TestDeliveryWorker;

beforeAll(async () => {
  rx = await new WebhookReceiver().start();
  t = await createTestContext({
    COUNTRIES: 'JP',
    ENDPOINT_ALLOW_PRIVATE: 'true',
    DELIVERY_RETRY_SCHEDULE: '200ms,200ms,200ms',
    DELIVERY_TIMEOUT: '5s',
    RATE_LIMIT_API: '0',
    TELEGRAM_API_URL: rx.url,
  });
  worker = await startTestDeliveryWorker(t, 'ntfy-telegram');
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await rx?.close();
});

interface AlertAnswer {
  id: string;
  channel: string;
  webhook_url: string | null;
  endpoint_id: string;
}

let bots = 0;
/** A bot token of the documented shape, one per test, so that each has its own path on the receiver. */
function botToken(): { token: string; path: string } {
  bots++;
  const token = `${700_000 + bots}:AAH${String(bots).padStart(4, '0')}-secret_part-of-the-token-xyz`;
  return { token, path: `/bot${token}/sendMessage` };
}

async function createAlert(headers: Record<string, string>, body: Record<string, unknown>): Promise<AlertAnswer> {
  const res = await t.http
    .post('/api/alerts')
    .set(headers)
    .send({ country: 'JP', ...body });
  expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
  return res.body.data as AlertAnswer;
}

async function describeProduct(asin: string, title: string, url: string | null = null) {
  const res = await productModel(t.ctx.mongo).updateOne({ country: 'JP', asin }, { $set: { title, url } });
  expect(res.matchedCount).toBe(1);
}

const json = (r: Received) => JSON.parse(r.body) as Record<string, unknown>;

async function recordOf(headers: Record<string, string>, alertId: string, status: string) {
  const [rec] = await until(`a ${status} record`, async () => {
    const list = await deliveriesOf(t, headers, alertId);
    return list[0]?.status === status ? list : undefined;
  });
  return rec!;
}

describe('the requests, as the services document them', () => {
  it('ntfy gets a JSON publish at its server root, with the token as a Bearer token when there is one', async () => {
    const a = await testAccount(t, 'ntfy-shape@example.com');
    const asin = 'B0NTFYSHP1';
    const token = 'tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2';
    const drop = await createAlert(a.headers, {
      asin,
      kind: 'price_drop',
      percent: 5,
      channel: 'ntfy',
      webhook_url: `${rx.url}/ntfy-a/shelf_alerts-1`,
      ntfy_token: token,
    });
    const any = await createAlert(a.headers, { asin, kind: 'any_change', channel: 'ntfy', webhook_url: `${rx.url}/ntfy-b/open-topic` });
    const link = 'https://www.amazon.co.jp/dp/B0NTFYSHP1?tag=x&ref=y';
    await describeProduct(asin, 'Kettle <b>&amp; more</b> "1.2 L"', link);

    expect(await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 1_980 }, { price: 1_780 })])).toBe(2);
    const [protectedOne] = await rx.waitFor('/ntfy-a/', 1);
    const [open] = await rx.waitFor('/ntfy-b/', 1);
    expect(protectedOne!.method).toBe('POST');
    expect(protectedOne!.headers['content-type']).toMatch(/^application\/json/);
    expect(protectedOne!.headers.authorization).toBe(`Bearer ${token}`);
    expect(protectedOne!.headers['webhook-signature']).toBeUndefined();
    const body = json(protectedOne!);
    expect(Object.keys(body).sort()).toEqual(['click', 'message', 'priority', 'tags', 'title', 'topic']);
    expect(body).toMatchObject({
      topic: 'shelf_alerts-1',
      title: 'Price drop',
      priority: 4,
      tags: ['chart_with_downwards_trend'],
      click: link,
    });
    // Plain text (no `markdown`): the title arrives as the upstream wrote it.
    expect(body.message).toMatch(/^Kettle <b>&amp; more<\/b> "1\.2 L"\n￥1,980 → ￥1,780 \(−10\.1%\)\nB0NTFYSHP1 · JP · \d{4}-\d\d-\d\d /);

    expect(open!.headers.authorization).toBeUndefined();
    expect(json(open!)).toMatchObject({ topic: 'open-topic', title: 'Change', priority: 3, tags: ['bell'] });
    for (const alert of [drop, any])
      expect(await recordOf(a.headers, alert.id, 'delivered')).toMatchObject({ attempts: 1, response_code: 200 });
  });

  it('Telegram gets sendMessage in HTML mode, every text escaped, the link attribute-escaped, previews off', async () => {
    const a = await testAccount(t, 'telegram-shape@example.com');
    const asin = 'B0TGSHAPE1';
    const numeric = botToken();
    const channel = botToken();
    const toGroup = await createAlert(a.headers, {
      asin,
      kind: 'price_below',
      price: 1_900,
      channel: 'telegram',
      telegram_bot_token: numeric.token,
      telegram_chat_id: -1001234567890,
    });
    await createAlert(a.headers, {
      asin,
      kind: 'any_change',
      channel: 'telegram',
      telegram_bot_token: channel.token,
      telegram_chat_id: '@Shelf_Deals',
    });
    await describeProduct(asin, 'Kettle <b>& co</b>', 'https://www.amazon.co.jp/dp/B0TGSHAPE1?tag=a&ref=b"x');

    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 1_980 }, { price: 1_780 })]);
    const [got] = await rx.waitFor(numeric.path, 1);
    const [toChannel] = await rx.waitFor(channel.path, 1);
    expect(got!.method).toBe('POST');
    expect(got!.headers['content-type']).toMatch(/^application\/json/);
    const body = json(got!) as { chat_id: unknown; text: string; parse_mode: string; link_preview_options: unknown };
    expect(Object.keys(body).sort()).toEqual(['chat_id', 'link_preview_options', 'parse_mode', 'text']);
    expect(body).toMatchObject({ chat_id: -1001234567890, parse_mode: 'HTML', link_preview_options: { is_disabled: true } });
    const lines = body.text.split('\n');
    expect(lines.slice(0, 3)).toEqual(['<b>Price below ￥1,900</b>', 'Kettle &lt;b&gt;&amp; co&lt;/b&gt;', '￥1,980 → ￥1,780 (−10.1%)']);
    expect(lines[3]).toMatch(/^<a href="https:\/\/www\.amazon\.co\.jp\/dp\/B0TGSHAPE1\?tag=a&amp;ref=b%22x">B0TGSHAPE1<\/a> · JP · /);
    // A public channel's @username goes as the String the API takes, in lower case.
    expect(json(toChannel!).chat_id).toBe('@shelf_deals');
    expect(await recordOf(a.headers, toGroup.id, 'delivered')).toMatchObject({ attempts: 1, response_code: 200 });
  });
});

describe('the credentials are secrets', () => {
  it('are sealed, never in an answer, a record, a job or a log line; answers show a redacted target', async () => {
    const a = await testAccount(t, 'tg-sealed@example.com');
    const bot = botToken();
    const secretPart = bot.token.slice(bot.token.indexOf(':') + 1);
    const ntfyToken = 'tk_SealedNtfyToken0123456789abcd';
    const tg = await createAlert(a.headers, {
      asin: 'B0TGSEALED',
      kind: 'any_change',
      channel: 'telegram',
      telegram_bot_token: bot.token,
      telegram_chat_id: '987654321',
    });
    const nt = await createAlert(a.headers, {
      asin: 'B0TGSEALED',
      kind: 'back_in_stock',
      channel: 'ntfy',
      webhook_url: `${rx.url}/sealed/private-topic-name`,
      ntfy_token: ntfyToken,
    });
    expect(tg).toMatchObject({ channel: 'telegram', webhook_url: `telegram:bot${bot.token.split(':')[0]}/…4321` });
    expect(nt).toMatchObject({ channel: 'ntfy', webhook_url: `${rx.url}/…name` });

    // One endpoint per account, channel and target: the same bot and chat again is the same endpoint; another chat is another.
    const again = await createAlert(a.headers, {
      asin: 'B0TGSEALED',
      kind: 'out_of_stock',
      channel: 'telegram',
      telegram_bot_token: bot.token,
      telegram_chat_id: 987654321,
    });
    expect(again.endpoint_id).toBe(tg.endpoint_id);
    const otherChat = await createAlert(a.headers, {
      asin: 'B0TGSEALED',
      kind: 'buybox_change',
      channel: 'telegram',
      telegram_bot_token: bot.token,
      telegram_chat_id: '987654322',
    });
    expect(otherChat.endpoint_id).not.toBe(tg.endpoint_id);

    await t.ctx.deliveries.enqueueFor([changeOf('B0TGSEALED', { price: null, availability: 'out_of_stock' }, { price: 100 })]);
    await rx.waitFor(bot.path, 1);
    expect((await rx.waitFor('/sealed/', 1))[0]!.headers.authorization).toBe(`Bearer ${ntfyToken}`);
    await recordOf(a.headers, tg.id, 'delivered');
    await recordOf(a.headers, nt.id, 'delivered');
    const secrets = [secretPart, ntfyToken, 'private-topic-name'];
    const answers = [
      await t.http.get(`/api/alerts/${tg.id}`).set(a.headers),
      await t.http.get('/api/alerts').set(a.headers),
      await t.http.get('/api/webhooks').set(a.headers),
      await t.http.get(`/api/webhooks/${nt.endpoint_id}`).set(a.headers),
      await t.http.get(`/api/alerts/${tg.id}/deliveries`).set(a.headers),
      await t.http.get('/api/deliveries').set(a.headers),
    ];
    for (const res of answers) for (const s of secrets) expect(JSON.stringify(res.body)).not.toContain(s);
    const db = t.ctx.mongo.db!;
    for (const { name } of await db.listCollections().toArray()) {
      const docs = JSON.stringify(await db.collection(name).find({}).toArray());
      for (const s of secrets) expect(docs, `collection ${name}`).not.toContain(s);
    }
    const jobs = await t.ctx.deliveryJobs.queue.getJobs(['completed', 'wait', 'prioritized', 'delayed', 'active', 'failed']);
    for (const job of jobs) for (const s of secrets) expect(JSON.stringify(job.data)).not.toContain(s);
    for (const s of secrets) expect(t.logs.text).not.toContain(s);
  });
});

const telegramError = (code: number, description: string, parameters?: Record<string, unknown>) => ({
  status: code,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) }),
});

describe("the services' error answers", () => {
  it.each([
    ['ntfy', 401, 'B0GONENT01', 'the ntfy server refused the access token (missing, expired or deleted)', ''],
    ['ntfy', 403, 'B0GONENT02', 'the ntfy topic may not be written with this access token', ''],
    ['telegram', 401, 'B0GONETG01', 'Telegram refused the bot token (revoked, or not a bot token)', 'Unauthorized'],
    ['telegram', 403, 'B0GONETG02', 'the Telegram bot was blocked, or removed from the chat', 'Forbidden: bot was blocked by the user'],
    [
      'telegram',
      400,
      'B0GONETG03',
      'the Telegram chat was not found (a wrong chat id, or the bot was never added to it)',
      'Bad Request: chat not found',
    ],
    ['telegram', 400, 'B0GONETG04', 'the Telegram chat id is empty', 'Bad Request: chat_id is empty'],
  ] as const)('%s answering %i (%s) disables the endpoint at once, with its event', async (channel, code, asin, why, description) => {
    const a = await testAccount(t, `gone-${asin.toLowerCase()}@example.com`);
    let target: Record<string, unknown>;
    let path: string;
    if (channel === 'ntfy') {
      path = `/gone-ntfy-${code}/`;
      target = { webhook_url: `${rx.url}${path}topic`, ntfy_token: 'tk_GoneNtfyToken000000000000000' };
      rx.answers(path, [{ status: code, headers: { 'content-type': 'application/json' }, body: `{"code":${code}01,"http":${code}}` }]);
    } else {
      const bot = botToken();
      path = bot.path;
      target = { telegram_bot_token: bot.token, telegram_chat_id: 42 };
      rx.answers(path, [telegramError(code, description)]);
    }
    const alert = await createAlert(a.headers, { asin, kind: 'any_change', channel, ...target });
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 1 }, { rank: 2 })]);
    const reason = `the receiver answered ${code}: ${why}`;
    expect(await recordOf(a.headers, alert.id, 'gone')).toMatchObject({
      attempts: 1,
      response_code: code,
      last_error: `${reason}: the endpoint is disabled`,
    });
    const endpoint = await t.http.get(`/api/webhooks/${alert.endpoint_id}`).set(a.headers);
    expect(endpoint.body.data).toMatchObject({ state: 'disabled', disabled_reason: reason });
    const event = await until('event', async () => (await t.http.get('/api/events').set(a.headers)).body.data[0]);
    expect(event).toMatchObject({ type: 'endpoint.disabled', endpoint_id: alert.endpoint_id, reason, url: alert.webhook_url });
    expect(await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 2 }, { rank: 3 })])).toBe(0);
    expect(rx.at(path)).toHaveLength(1);
  });

  it('a 429 is retried after the wait it asks for: Retry-After (ntfy), parameters.retry_after (Telegram)', async () => {
    const a = await testAccount(t, 'wait@example.com');
    const bot = botToken();
    rx.answers(bot.path, [telegramError(429, 'Too Many Requests: retry after 1', { retry_after: 1 })]);
    rx.answers('/wait-ntfy/', [{ status: 429, headers: { 'retry-after': '1' }, body: '{"code":42901,"http":429}' }]);
    const tg = await createAlert(a.headers, {
      asin: 'B0TGWAIT01',
      kind: 'any_change',
      channel: 'telegram',
      telegram_bot_token: bot.token,
      telegram_chat_id: 7,
    });
    const nt = await createAlert(a.headers, {
      asin: 'B0TGWAIT01',
      kind: 'back_in_stock',
      channel: 'ntfy',
      webhook_url: `${rx.url}/wait-ntfy/t`,
    });
    await t.ctx.deliveries.enqueueFor([changeOf('B0TGWAIT01', { price: null, availability: 'out_of_stock' }, { price: 100 })]);
    for (const [alert, path] of [
      [tg, bot.path],
      [nt, '/wait-ntfy/'],
    ] as const) {
      const tries = await rx.waitFor(path, 2);
      expect(tries.map((r) => r.status)).toEqual([429, 200]);
      // The schedule says 200 ms; the answer asked for a second.
      expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(950);
      expect(await recordOf(a.headers, alert.id, 'delivered')).toMatchObject({ attempts: 2, response_code: 200 });
      const endpoint = await t.http.get(`/api/webhooks/${alert.endpoint_id}`).set(a.headers);
      expect(endpoint.body.data).toMatchObject({ state: 'active', disabled_at: null });
    }
  });

  it('a 5xx, or a 400 that does not say the chat is gone, is retried on the schedule', async () => {
    const a = await testAccount(t, 'retry-tg@example.com');
    const bot = botToken();
    rx.answers(bot.path, [{ status: 502, body: 'Bad Gateway' }, telegramError(400, "Bad Request: can't parse entities")]);
    const alert = await createAlert(a.headers, {
      asin: 'B0TGRETRY1',
      kind: 'any_change',
      channel: 'telegram',
      telegram_bot_token: bot.token,
      telegram_chat_id: 8,
    });
    await t.ctx.deliveries.enqueueFor([changeOf('B0TGRETRY1', { rank: 5 }, { rank: 6 })]);
    const tries = await rx.waitFor(bot.path, 3);
    expect(tries.map((r) => r.status)).toEqual([502, 400, 200]);
    expect(new Set(tries.map((r) => r.body)).size).toBe(1);
    expect(await recordOf(a.headers, alert.id, 'delivered')).toMatchObject({ attempts: 3, response_code: 200 });
  });
});

describe('the test button', () => {
  it('sends a sample marked [Test], records nothing, and reports a gone chat without acting on it', async () => {
    const a = await testAccount(t, 'tg-test@example.com');
    const bot = botToken();
    const tg = await createAlert(a.headers, {
      asin: 'B0TGTEST01',
      kind: 'price_drop',
      amount: 100,
      channel: 'telegram',
      telegram_bot_token: bot.token,
      telegram_chat_id: 9,
    });
    const nt = await createAlert(a.headers, {
      asin: 'B0TGTEST01',
      kind: 'out_of_stock',
      channel: 'ntfy',
      webhook_url: `${rx.url}/test-ntfy/t`,
    });

    const ok = await t.http.post(`/api/alerts/${tg.id}/test`).set(a.headers);
    expect(ok.body.data).toMatchObject({ outcome: 'delivered', status: 200, ok: true, error: null });
    expect((json(rx.at(bot.path)[0]!) as { text: string }).text).toMatch(/^<b>\[Test\] Price drop<\/b>\nB0TGTEST01\n/);
    const ntfyOk = await t.http.post(`/api/alerts/${nt.id}/test`).set(a.headers);
    expect(ntfyOk.body.data).toMatchObject({ outcome: 'delivered', ok: true });
    expect(json(rx.at('/test-ntfy/')[0]!)).toMatchObject({ title: '[Test] Out of stock', priority: 3 });

    rx.answers(bot.path, [telegramError(400, 'Bad Request: chat not found')]);
    const gone = await t.http.post(`/api/alerts/${tg.id}/test`).set(a.headers);
    expect(gone.body.data).toMatchObject({
      outcome: 'refused',
      status: 400,
      ok: false,
      error: 'the receiver answered 400: the Telegram chat was not found (a wrong chat id, or the bot was never added to it)',
    });
    expect((await t.http.get(`/api/webhooks/${tg.endpoint_id}`).set(a.headers)).body.data).toMatchObject({ state: 'active' });
    for (const alert of [tg, nt]) expect(await deliveriesOf(t, a.headers, alert.id)).toEqual([]);
    expect(t.logs.text).not.toContain(bot.token);
  });
});

describe('what POST /api/alerts takes for ntfy and Telegram', () => {
  const bot = '123456789:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0';
  const hook = 'https://93.184.216.34/x';
  let n = 0;
  it.each([
    [{ channel: 'telegram', telegram_bot_token: 'not-a-token', telegram_chat_id: 1 }, 'telegram_bot_token', /field must be a bot token/],
    [{ channel: 'telegram', telegram_bot_token: '123:AAHshort', telegram_chat_id: 1 }, 'telegram_bot_token', /field must be a bot token/],
    [{ channel: 'telegram', telegram_bot_token: bot, telegram_chat_id: 'my channel' }, 'telegram_chat_id', /field must be a chat id/],
    [{ channel: 'telegram', telegram_bot_token: bot, telegram_chat_id: 1.5 }, 'telegram_chat_id', /field must be a chat id/],
    [{ channel: 'telegram', telegram_bot_token: bot }, 'telegram_chat_id', /field is required for channel telegram\.$/],
    [{ channel: 'telegram', telegram_chat_id: 1 }, 'telegram_bot_token', /field is required for channel telegram\.$/],
    [{ channel: 'telegram', telegram_bot_token: bot, telegram_chat_id: 1, webhook_url: hook }, 'webhook_url', /not for channel telegram/],
    [{ channel: 'slack', webhook_url: hook, telegram_bot_token: bot }, 'telegram_bot_token', /field is only for channel telegram\.$/],
    [{ channel: 'discord', webhook_url: hook, ntfy_token: 'tk_abcdefgh12345' }, 'ntfy_token', /field is only for channel ntfy\.$/],
    [{ channel: 'ntfy', webhook_url: 'https://ntfy.sh/' }, 'webhook_url', /field must be an ntfy topic URL/],
    [{ channel: 'ntfy', webhook_url: 'https://ntfy.sh/topic?x=1' }, 'webhook_url', /field must be an ntfy topic URL/],
    [
      { channel: 'ntfy', webhook_url: 'https://ntfy.sh/topic', ntfy_token: 'secret-token-value' },
      'ntfy_token',
      /field must be an ntfy access/,
    ],
  ])('%j is refused on %s (422), nothing is created and no token is echoed', async (body, field, message) => {
    const a = await testAccount(t, `refused-${n++}@example.com`);
    const res = await t.http
      .post('/api/alerts')
      .set(a.headers)
      .send({ asin: 'B0TGFIELDS', country: 'JP', kind: 'any_change', ...body });
    expect(res.status).toBe(422);
    expect(res.body.errors[field][0]).toMatch(message);
    for (const secret of ['AAHfiqks', 'not-a-token', 'AAHshort', 'secret-token-value'])
      expect(JSON.stringify(res.body)).not.toContain(secret);
    expect((await t.http.get('/api/alerts').set(a.headers)).body.meta.total).toBe(0);
    expect((await t.http.get('/api/webhooks').set(a.headers)).body.meta.total).toBe(0);
  });
});
