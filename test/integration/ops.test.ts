import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { until } from '../helpers/until.js';

let withBoard: TestContext;
let without: TestContext;
beforeAll(async () => {
  withBoard = await createTestContext({ BULL_BOARD_USER: 'ops', BULL_BOARD_PASSWORD: 'correct horse battery' });
  without = await createTestContext();
});
afterAll(async () => {
  await withBoard?.close();
  await without?.close();
});

const basic = (u: string, p: string): string => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

describe('Bull Board', () => {
  it('is not there without credentials in the configuration', async () => {
    expect((await without.http.get('/admin/queues')).status).toBe(404);
  });

  it('asks for its credentials and serves the board with them', async () => {
    const none = await withBoard.http.get('/admin/queues');
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Basic /);
    expect((await withBoard.http.get('/admin/queues').set('Authorization', basic('ops', 'wrong password!'))).status).toBe(401);
    expect((await withBoard.http.get('/admin/queues/api/queues').set('Authorization', basic('ops', 'wrong password!'))).status).toBe(401);
    const page = await withBoard.http.get('/admin/queues').set('Authorization', basic('ops', 'correct horse battery'));
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    const api = await withBoard.http.get('/admin/queues/api/queues').set('Authorization', basic('ops', 'correct horse battery'));
    expect(api.status).toBe(200);
    expect(api.body.queues.map((q: { name: string }) => q.name).sort()).toEqual([
      'crawl-JP',
      'crawl-US',
      'deliveries',
      'forced-JP',
      'forced-US',
      'import-JP',
      'import-US',
      'refresh-JP',
      'refresh-US',
    ]);
  });

  it("shows a country's queues paused by its breaker, with why", async () => {
    const auth = basic('ops', 'correct horse battery');
    const queues = async () =>
      (await withBoard.http.get('/admin/queues/api/queues').set('Authorization', auth)).body.queues as {
        name: string;
        isPaused: boolean;
        description?: string;
      }[];
    await withBoard.ctx.breakers.open('JP', 'eligibility', 'AssociateNotEligible', { op: 'getItems', args: [['B0BOARD001']] });
    try {
      // The board asks for descriptions as it lists the queues: the breaker's is there by the next listing.
      await queues();
      const listed = await until(
        'the reason on the board',
        async () => {
          const q = (await queues()).find((x) => x.name === 'refresh-JP');
          return q?.description ? q : undefined;
        },
        5_000,
        50,
      );
      expect(listed.isPaused).toBe(true);
      expect(listed.description).toMatch(/^Paused by the breaker: the upstream is refusing JP \(eligibility: AssociateNotEligible\)/);
      expect((await queues()).find((x) => x.name === 'refresh-US')).toMatchObject({ isPaused: false });
    } finally {
      await withBoard.ctx.breakers.close('JP');
    }
    expect(await withBoard.ctx.jobs.queue('JP').isPaused()).toBe(false);
  });
});

describe('GET /metrics', () => {
  it('serves Prometheus text with the queue and upstream metrics', async () => {
    await without.ctx.jobs.add('refresh.p0', { country: 'JP', asins: ['B0METRIC01'] });
    const res = await without.http.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.text).toMatch(/shelfwatch_queue_jobs\{country="JP",queue="refresh",state="prioritized"\} 1/);
    for (const name of [
      'shelfwatch_upstream_calls_total',
      'shelfwatch_refresh_lag_seconds',
      'shelfwatch_products_due',
      'shelfwatch_queue_oldest_waiting_seconds',
      'shelfwatch_quota_permits_total',
      'shelfwatch_quota_permit_wait_seconds',
      'shelfwatch_quota_calls_left_today',
      'shelfwatch_quota_forced_share_used_ratio',
    ]) {
      expect(res.text).toContain(`# TYPE ${name}`);
    }
    // Each country's breaker and pace margin, read from Redis on the scrape whoever set them.
    expect(res.text).toMatch(/^shelfwatch_upstream_breaker_open\{country="JP"\} 0$/m);
    expect(res.text).toMatch(/^shelfwatch_quota_pace_margin_seconds\{country="US"\} 0$/m);
  });

  it("counts the process's MongoDB round trips", async () => {
    const read = async (): Promise<number> => {
      const text = (await without.http.get('/metrics')).text;
      return Number(/^shelfwatch_mongo_commands_total (\S+)$/m.exec(text)?.[1] ?? 0);
    };
    await without.ctx.users.create({ name: 'Counted', email: 'counted@example.com' });
    const before = await read();
    // A list with entries counts them and reads its page (a find).
    await without.http.get('/api/user').expect(200);
    expect(await read()).toBeGreaterThan(before);
  });
});
