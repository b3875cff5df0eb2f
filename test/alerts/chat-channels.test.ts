import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { WebhookReceiver, type Received } from '../helpers/webhook-receiver.js';
import { until } from '../helpers/until.js';
import { changeOf, deliveriesOf, startTestDeliveryWorker, testAccount, type TestDeliveryWorker } from '../helpers/deliveries.js';
import { productModel } from '../../src/models/product.js';
import { sendOnChannel } from '../../src/alerts/deliveries/channels/dispatch.js';
import { WebhookTargetRefusedError } from '../../src/core/errors.js';

/**
 * Slack, Discord and Teams alerts through the real DeliveryQueue and delivery worker, a loopback
 * receiver standing in for each service: the payload shapes they accept, the hook URL kept sealed
 * (it is the credential), the address guard, the test button, and the services' "gone" answers.
 */
let t: TestContext;
/** The default ENDPOINT_ALLOW_PRIVATE=false, for the address guard. */
let guarded: TestContext;
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
  });
  guarded = await createTestContext({ COUNTRIES: 'JP', RATE_LIMIT_API: '0' });
  worker = await startTestDeliveryWorker(t, 'chat-channels');
});

afterAll(async () => {
  await worker?.stop();
  await guarded?.close();
  await t?.close();
  await rx?.close();
});

interface AlertAnswer {
  id: string;
  channel: string;
  webhook_url: string | null;
  email: string | null;
  secret: string | null;
  endpoint_id: string;
}

async function createAlert(headers: Record<string, string>, body: Record<string, unknown>): Promise<AlertAnswer> {
  const res = await t.http
    .post('/api/alerts')
    .set(headers)
    .send({ country: 'JP', ...body });
  expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
  return res.body.data as AlertAnswer;
}

/** The product as the upstream described it, as a delivery reads it. */
async function describeProduct(asin: string, title: string, url: string | null = null) {
  const res = await productModel(t.ctx.mongo).updateOne({ country: 'JP', asin }, { $set: { title, url } });
  expect(res.matchedCount, `the product ${asin} exists once its alert watches it`).toBe(1);
}

const json = (r: Received) => JSON.parse(r.body) as Record<string, unknown>;

describe('the payload each chat service accepts', () => {
  it('Slack gets {text, blocks}, Discord {content, embeds}, Teams a message with an Adaptive Card; no signature headers', async () => {
    const a = await testAccount(t, 'shapes@example.com');
    const asin = 'B0CHATSHP1';
    rx.script('/discord/1/tok', [204]);
    rx.script('/teams/workflow', [202]);
    const slack = await createAlert(a.headers, {
      asin,
      kind: 'price_drop',
      percent: 5,
      channel: 'slack',
      webhook_url: `${rx.url}/slack/T1/B1/tok`,
    });
    const discord = await createAlert(a.headers, { asin, kind: 'any_change', channel: 'discord', webhook_url: `${rx.url}/discord/1/tok` });
    const teams = await createAlert(a.headers, {
      asin,
      kind: 'price_below',
      price: 1_900,
      channel: 'teams',
      webhook_url: `${rx.url}/teams/workflow`,
    });
    expect(new Set([slack.endpoint_id, discord.endpoint_id, teams.endpoint_id]).size).toBe(3);
    const link = 'https://www.amazon.co.jp/dp/B0CHATSHP1?tag=shelfwatch-22';
    await describeProduct(asin, 'Kettle <1.2 L> & more @everyone', link);

    expect(await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: 1_980 }, { price: 1_780 })])).toBe(3);
    const [s] = await rx.waitFor('/slack/T1/B1/tok', 1);
    const [d] = await rx.waitFor('/discord/1/tok', 1);
    const [m] = await rx.waitFor('/teams/workflow', 1);
    for (const got of [s!, d!, m!]) {
      expect(got.headers['content-type']).toMatch(/^application\/json/);
      expect(got.headers['webhook-signature']).toBeUndefined();
    }

    // Slack: &, < and > escaped everywhere; the title in a plain_text block (no markup), the ASIN linking to the product page.
    const slackBody = json(s!) as {
      text: string;
      mrkdwn: boolean;
      blocks: { type: string; text?: { type: string; text: string }; elements?: unknown[] }[];
    };
    expect(Object.keys(slackBody).sort()).toEqual(['blocks', 'mrkdwn', 'text']);
    expect(slackBody.mrkdwn).toBe(false);
    expect(slackBody.text).toBe('Price drop: Kettle &lt;1.2 L&gt; &amp; more @everyone (JP) ￥1,980 → ￥1,780 (−10.1%)');
    expect(slackBody.blocks[0]).toEqual({ type: 'section', text: { type: 'mrkdwn', text: '*Price drop*\n￥1,980 → ￥1,780 (−10.1%)' } });
    expect(slackBody.blocks[1]).toEqual({
      type: 'section',
      text: { type: 'plain_text', text: 'Kettle &lt;1.2 L&gt; &amp; more @everyone', emoji: false },
    });
    expect(slackBody.blocks[2]).toMatchObject({
      type: 'context',
      elements: [{ type: 'mrkdwn', text: expect.stringMatching(new RegExp(`^<${link.replace(/[?.]/g, '\\$&')}\\|B0CHATSHP1> · JP · `)) }],
    });

    // Discord: the plain line, one embed linking to the product, the title's markdown escaped, and no mention that could ping.
    const discordBody = json(d!) as { content: string; embeds: Record<string, unknown>[]; allowed_mentions: unknown };
    expect(discordBody.content).toBe('Change: Kettle \\<1.2 L\\> & more @everyone (JP) ￥1,980 → ￥1,780 (−10.1%)');
    expect(discordBody.allowed_mentions).toEqual({ parse: [] });
    expect(discordBody.embeds).toHaveLength(1);
    expect(discordBody.embeds[0]).toMatchObject({
      title: 'Kettle \\<1.2 L\\> & more @everyone',
      url: link,
      description: '**Change**\n￥1,980 → ￥1,780 (−10.1%)',
      fields: [
        { name: 'ASIN', value: asin, inline: true },
        { name: 'Marketplace', value: 'JP', inline: true },
        { name: 'Seen', value: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/), inline: true },
      ],
    });

    // Teams: a message whose one attachment is an Adaptive Card.
    const teamsBody = json(m!) as { type: string; attachments: { contentType: string; content: Record<string, unknown> }[] };
    expect(teamsBody.type).toBe('message');
    expect(teamsBody.attachments).toHaveLength(1);
    expect(teamsBody.attachments[0]!.contentType).toBe('application/vnd.microsoft.card.adaptive');
    const card = teamsBody.attachments[0]!.content as {
      type: string;
      version: string;
      body: Record<string, unknown>[];
      actions: unknown[];
    };
    expect(card).toMatchObject({ type: 'AdaptiveCard', version: '1.4', $schema: 'http://adaptivecards.io/schemas/adaptive-card.json' });
    expect(card.body[0]).toMatchObject({ type: 'TextBlock', text: 'Price below ￥1,900' });
    // The title in a TextRun, which reads no markdown.
    expect(card.body[1]).toEqual({ type: 'RichTextBlock', inlines: [{ type: 'TextRun', text: 'Kettle <1.2 L> & more @everyone' }] });
    expect(card.body[2]).toMatchObject({
      type: 'FactSet',
      facts: expect.arrayContaining([{ title: 'Change', value: '￥1,980 → ￥1,780 (−10.1%)' }]),
    });
    expect(card.actions).toEqual([{ type: 'Action.OpenUrl', title: 'Open the product page', url: link }]);

    // Any 2xx acknowledges (Discord's 204, a Workflow's 202), recorded as for a webhook.
    for (const [alert, code] of [
      [slack, 200],
      [discord, 204],
      [teams, 202],
    ] as const) {
      const [rec] = await until(`${alert.channel} delivered`, async () => {
        const list = await deliveriesOf(t, a.headers, alert.id);
        return list[0]?.status === 'delivered' ? list : undefined;
      });
      expect(rec).toMatchObject({ status: 'delivered', attempts: 1, response_code: code });
    }
  });

  it('a product the service has no title for is named by its ASIN and linked on its marketplace', async () => {
    const a = await testAccount(t, 'untitled@example.com');
    const asin = 'B0CHATNOTT';
    await createAlert(a.headers, { asin, kind: 'back_in_stock', channel: 'slack', webhook_url: `${rx.url}/slack/untitled` });
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { price: null, availability: 'out_of_stock' }, { price: 2_500 })]);
    const [got] = await rx.waitFor('/slack/untitled', 1);
    expect((json(got!) as { text: string }).text).toBe('Back in stock: B0CHATNOTT (JP) out of stock → ￥2,500');
    expect(got!.body).toContain('<https://www.amazon.co.jp/dp/B0CHATNOTT|B0CHATNOTT>');
  });
});

describe('a chat webhook URL is a secret', () => {
  it('is stored sealed, never in the clear, and every answer shows it redacted', async () => {
    const a = await testAccount(t, 'sealed@example.com');
    const token = 'XyZzY-sealed-hook-token-0123456789';
    const url = `${rx.url}/services/T0SEALED/B0SEALED/${token}`;
    const created = await createAlert(a.headers, { asin: 'B0CHATSEAL', kind: 'any_change', channel: 'slack', webhook_url: url });
    const shown = `${rx.url}/…6789`;
    expect(created).toMatchObject({ channel: 'slack', webhook_url: shown, email: null, secret: null });

    // The same URL again is the same endpoint (its key is a hash of it); another kind on it too.
    const again = await createAlert(a.headers, { asin: 'B0CHATSEAL', kind: 'any_change', channel: 'slack', webhook_url: url });
    expect(again.endpoint_id).toBe(created.endpoint_id);
    const other = await createAlert(a.headers, { asin: 'B0CHATSEAL', kind: 'back_in_stock', channel: 'slack', webhook_url: url });
    expect(other.endpoint_id).toBe(created.endpoint_id);
    // On another channel it is another endpoint: one per (account, channel, target).
    const discord = await createAlert(a.headers, {
      asin: 'B0CHATSEAL',
      kind: 'price_drop',
      percent: 10,
      channel: 'discord',
      webhook_url: url,
    });
    expect(discord.endpoint_id).not.toBe(created.endpoint_id);

    const answers = [
      await t.http.get(`/api/alerts/${created.id}`).set(a.headers),
      await t.http.get('/api/alerts').set(a.headers),
      await t.http.get('/api/webhooks').set(a.headers),
      await t.http.get(`/api/webhooks/${created.endpoint_id}`).set(a.headers),
    ];
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body)).not.toContain(token);
    }
    expect(answers[0]!.body.data).toMatchObject({ channel: 'slack', webhook_url: shown });
    expect(answers[3]!.body.data).toMatchObject({ id: created.endpoint_id, channel: 'slack', url: shown, state: 'active' });

    // A delivery reaches the real URL, though nothing holds it in the clear: not the database, not the job, not a log line.
    await t.ctx.deliveries.enqueueFor([changeOf('B0CHATSEAL', { rank: 1 }, { rank: 2 })]);
    await rx.waitFor(`/services/T0SEALED/B0SEALED/${token}`, 1);
    await until('delivered', async () => (await deliveriesOf(t, a.headers, created.id))[0]?.status === 'delivered');
    const db = t.ctx.mongo.db!;
    for (const { name } of await db.listCollections().toArray()) {
      const docs = await db.collection(name).find({}).toArray();
      expect(JSON.stringify(docs), `collection ${name}`).not.toContain(token);
    }
    const jobs = await t.ctx.deliveryJobs.queue.getJobs(['completed', 'wait', 'prioritized', 'delayed', 'active', 'failed']);
    expect(jobs.length).toBeGreaterThan(0);
    for (const job of jobs) expect(JSON.stringify(job.data)).not.toContain(token);
    expect(t.logs.text).not.toContain(token);
  });
});

describe('the address guard', () => {
  it('refuses a chat URL that is not https or points at a private or loopback address, at creation', async () => {
    const a = await testAccount(guarded, 'guard@example.com');
    const post = (body: Record<string, unknown>) =>
      guarded.http
        .post('/api/alerts')
        .set(a.headers)
        .send({ asin: 'B0CHATGRD1', country: 'JP', kind: 'any_change', ...body });
    for (const [channel, url, words] of [
      ['slack', 'https://127.0.0.1/services/T/B/x', /loopback address/],
      ['discord', 'https://10.1.2.3/api/webhooks/1/x', /private address/],
      ['teams', 'https://[::ffff:192.168.0.1]/workflows/x', /private address/],
      ['slack', 'http://hooks.slack.example/services/T/B/x', /must be an https URL/],
    ] as const) {
      const res = await post({ channel, webhook_url: url });
      expect(res.status, `${channel} ${url}`).toBe(422);
      expect(res.body.errors.webhook_url[0]).toMatch(words);
      // The answer names the class of address, never the URL.
      expect(JSON.stringify(res.body)).not.toContain('/x');
    }
    expect((await guarded.http.get('/api/alerts').set(a.headers)).body.meta.total).toBe(0);
  });

  it('refuses at connection time a chat host that resolves to a private address', async () => {
    const before = rx.received.length;
    const send = sendOnChannel(
      {
        channel: 'discord',
        target: 'https://discord.chat.example/api/webhooks/1/token',
        secrets: [],
        id: 'guard-test',
        content: {
          endpoint_id: 'a'.repeat(24),
          user_id: 'b'.repeat(24),
          alerts: [{ id: 'c'.repeat(24), kind: 'any_change' }],
          asin: 'B0CHATGRD2',
          country: 'JP',
          before: null,
          after: { at: Date.now(), price: 100, currency: 'JPY', availability: 'in_stock', buybox: true, rank: 1 },
        },
        test: false,
        product: async () => ({ title: null, url: null }),
      },
      { config: guarded.config, resolve: async () => [{ address: '127.0.0.1', family: 4 }] },
    );
    await expect(send).rejects.toBeInstanceOf(WebhookTargetRefusedError);
    await expect(send).rejects.toThrow(/loopback address at connection time/);
    expect(rx.received.length).toBe(before);
  });
});

describe('the test button', () => {
  it('sends each chat channel a sample marked [Test], records nothing, and reports a gone hook without acting on it', async () => {
    const a = await testAccount(t, 'test-button@example.com');
    const asin = 'B0CHATTEST';
    const slack = await createAlert(a.headers, {
      asin,
      kind: 'price_drop',
      amount: 100,
      channel: 'slack',
      webhook_url: `${rx.url}/test/slack`,
    });
    const teams = await createAlert(a.headers, { asin, kind: 'back_in_stock', channel: 'teams', webhook_url: `${rx.url}/test/teams` });
    const discord = await createAlert(a.headers, { asin, kind: 'any_change', channel: 'discord', webhook_url: `${rx.url}/test/discord` });

    const ok = await t.http.post(`/api/alerts/${slack.id}/test`).set(a.headers);
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({
      outcome: 'delivered',
      status: 200,
      ok: true,
      error: null,
      webhook_id: expect.stringMatching(/^test\./),
    });
    const [got] = rx.at('/test/slack');
    const body = json(got!) as { text: string; blocks: { text?: { text: string } }[] };
    expect(body.text).toMatch(/^\[Test\] Price drop: B0CHATTEST \(JP\) ￥10,000 → ￥9,900 \(−1%\)$/);
    expect(body.blocks[0]!.text!.text).toMatch(/^\*\[Test\]\* \*Price drop\*/);

    rx.script('/test/teams', [202]);
    const card = await t.http.post(`/api/alerts/${teams.id}/test`).set(a.headers);
    expect(card.body.data).toMatchObject({ status: 202, ok: true });
    expect(rx.at('/test/teams')[0]!.body).toContain('[Test] Back in stock');

    rx.script('/test/discord', [404]);
    const gone = await t.http.post(`/api/alerts/${discord.id}/test`).set(a.headers);
    expect(gone.status).toBe(200);
    expect(gone.body.data).toMatchObject({
      outcome: 'refused',
      status: 404,
      ok: false,
      error: 'the receiver answered 404: the Discord webhook no longer exists',
    });
    const endpoint = await t.http.get(`/api/webhooks/${discord.endpoint_id}`).set(a.headers);
    expect(endpoint.body.data).toMatchObject({ state: 'active', disabled_at: null });
    for (const alert of [slack, teams, discord]) expect(await deliveriesOf(t, a.headers, alert.id)).toEqual([]);
  });
});

describe("a chat service's answers", () => {
  it.each([
    ['slack', 404, 'the receiver answered 404: the Slack webhook or its channel no longer exists'],
    ['slack', 410, 'the receiver answered 410: the Slack channel is archived'],
    ['discord', 404, 'the receiver answered 404: the Discord webhook no longer exists'],
    ['discord', 401, 'the receiver answered 401: the Discord webhook token is no longer valid'],
    ['teams', 404, 'the receiver answered 404: the Teams workflow or webhook no longer exists'],
  ] as const)('%s answering %i disables the endpoint at once, like a 410, with its event', async (channel, code, reason) => {
    const a = await testAccount(t, `gone-${channel}-${code}@example.com`);
    const asin = `B0GONE${channel.slice(0, 1).toUpperCase()}${code}`;
    const path = `/gone/${channel}/${code}/secret-part`;
    rx.script(path, [code]);
    const alert = await createAlert(a.headers, { asin, kind: 'any_change', channel, webhook_url: `${rx.url}${path}` });
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 1 }, { rank: 2 })]);
    const [rec] = await until('gone', async () => {
      const list = await deliveriesOf(t, a.headers, alert.id);
      return list[0]?.status === 'gone' ? list : undefined;
    });
    expect(rec).toMatchObject({ attempts: 1, response_code: code, last_error: `${reason}: the endpoint is disabled` });
    const event = await until('event', async () => (await t.http.get('/api/events').set(a.headers)).body.data[0]);
    expect(event).toMatchObject({ type: 'endpoint.disabled', endpoint_id: alert.endpoint_id, reason, url: alert.webhook_url });
    expect(JSON.stringify(event)).not.toContain('secret-part');
    expect((await t.http.get(`/api/alerts/${alert.id}`).set(a.headers)).body.data).toMatchObject({
      active: false,
      disabled_reason: reason,
    });
    // Disabled: a later change queues nothing.
    expect(await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 2 }, { rank: 3 })])).toBe(0);
    expect(rx.at(path)).toHaveLength(1);
  });

  it('any other failure is retried on the schedule, and the same message arrives again', async () => {
    const a = await testAccount(t, 'retry-chat@example.com');
    rx.script('/retry/teams', [500, 429]);
    const alert = await createAlert(a.headers, {
      asin: 'B0CHATRTRY',
      kind: 'any_change',
      channel: 'teams',
      webhook_url: `${rx.url}/retry/teams`,
    });
    await t.ctx.deliveries.enqueueFor([changeOf('B0CHATRTRY', { rank: 5 }, { rank: 6 })]);
    const tries = await rx.waitFor('/retry/teams', 3);
    expect(tries.map((r) => r.status)).toEqual([500, 429, 200]);
    expect(new Set(tries.map((r) => r.body)).size).toBe(1);
    const [rec] = await until('delivered', async () => {
      const list = await deliveriesOf(t, a.headers, alert.id);
      return list[0]?.status === 'delivered' ? list : undefined;
    });
    expect(rec).toMatchObject({ attempts: 3, response_code: 200 });
  });
});

describe('a wait the receiver asks for', () => {
  it.each(['slack', 'webhook'] as const)('%s: a 429 with Retry-After is retried after that wait, not the schedule', async (channel) => {
    const a = await testAccount(t, `wait-${channel}@example.com`);
    const asin = channel === 'slack' ? 'B0WAITSLK1' : 'B0WAITHOOK';
    const path = `/wait/${channel}`;
    rx.answers(path, [{ status: 429, headers: { 'retry-after': '1' }, body: '' }]);
    const alert = await createAlert(a.headers, { asin, kind: 'any_change', channel, webhook_url: `${rx.url}${path}` });
    await t.ctx.deliveries.enqueueFor([changeOf(asin, { rank: 5 }, { rank: 6 })]);
    const tries = await rx.waitFor(path, 2);
    expect(tries.map((r) => r.status)).toEqual([429, 200]);
    // The schedule says 200 ms; the answer asked for a second.
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(950);
    const [rec] = await until('delivered', async () => {
      const list = await deliveriesOf(t, a.headers, alert.id);
      return list[0]?.status === 'delivered' ? list : undefined;
    });
    expect(rec).toMatchObject({ attempts: 2, response_code: 200 });
  });
});

describe('what POST /api/alerts takes', () => {
  it.each([
    [{ channel: 'slack' }, 'webhook_url', /required for channel slack/],
    [{ channel: 'teams', webhook_url: 'https://93.184.216.34/x', email: 'a@example.com' }, 'email', /only for channel email/],
    [{ channel: 'sms', webhook_url: 'https://93.184.216.34/x' }, 'channel', /one of webhook, slack, discord, teams, email/],
    [{}, 'webhook_url', /^The webhook url field is required\.$/],
  ])('%j is refused on %s', async (body, field, message) => {
    const a = await testAccount(
      guarded,
      `fields-${field}-${Object.keys(body).length}-${String((body as { channel?: string }).channel)}@example.com`,
    );
    const res = await guarded.http
      .post('/api/alerts')
      .set(a.headers)
      .send({ asin: 'B0CHATFLDS', country: 'JP', kind: 'any_change', ...body });
    expect(res.status).toBe(422);
    expect(res.body.errors[field][0]).toMatch(message);
  });
});
