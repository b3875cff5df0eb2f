import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { exitOf, runCli, spawnCli, waitForLog } from '../helpers/cli.js';
import { testEnv, uniqueName } from '../helpers/context.js';

/** One pass over the log: the simulator's URL, returned once the process says it is ready. */
async function simulatorUrlOnceReady(child: ChildProcess): Promise<string> {
  let url = '';
  await waitForLog(child, (l) => {
    if (l.msg === 'upstream simulator listening') url = String(l.url);
    return l.msg === 'ready';
  });
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  return url;
}

describe('shelfwatch simulator', () => {
  it('runs alone (no MongoDB, no Redis), answers the wire format, and stops on SIGTERM', async () => {
    const child = spawnCli(['simulator'], { LOG_LEVEL: 'info', SIMULATOR_PORT: '0', SIMULATOR_QUOTA_RPS: '50' });
    try {
      const url = await simulatorUrlOnceReady(child);

      const tokenRes = await fetch(`${url}/auth/o2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          grant_type: 'client_credentials',
          client_id: 'shelfwatch-simulator',
          client_secret: 'shelfwatch-simulator-secret',
          scope: 'creatorsapi::default',
        }),
      });
      expect(tokenRes.status).toBe(200);
      const token = (await tokenRes.json()) as { access_token: string; expires_in: number; token_type: string };
      expect(token).toMatchObject({ token_type: 'bearer', expires_in: 3600 });

      const call = (body: unknown, auth = `Bearer ${token.access_token}`) =>
        fetch(`${url}/catalog/v1/getItems`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: auth, 'x-marketplace': 'www.amazon.co.jp' },
          body: JSON.stringify(body),
        });
      const ok = await call({
        partnerTag: 'x-22',
        itemIds: ['B000000001', 'B0INVALID!'],
        resources: ['itemInfo.title', 'offersV2.listings.price'],
      });
      expect(ok.status).toBe(200);
      const data = (await ok.json()) as {
        itemsResult?: { items: { asin: string; itemInfo?: { title?: { displayValue: string } } }[] };
        errors?: { code: string }[];
      };
      expect(data.errors?.map((e) => e.code)).toEqual(['InvalidParameterValue']);
      expect(data.itemsResult?.items[0]?.asin).toBe('B000000001');

      const foreign = await call({ partnerTag: 'x-22', itemIds: ['B000000001'] }, 'Bearer Atza|forged.token');
      expect(foreign.status).toBe(401);
      expect(await foreign.json()).toEqual({
        type: 'UnauthorizedException',
        message: 'The access token is invalid.',
        reason: 'InvalidToken',
      });

      const pascal = await call({ PartnerTag: 'x-22', ItemIds: ['B000000001'], PartnerType: 'Associates' });
      expect(pascal.status).toBe(400);
      expect(await pascal.json()).toMatchObject({ type: 'ValidationException', reason: 'FieldValidationFailed' });

      const faults = await fetch(`${url}/__faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"throttleBurst":1}',
      });
      expect(await faults.json()).toMatchObject({ throttleBurst: 1 });
      const throttled = await call({ partnerTag: 'x-22', itemIds: ['B000000001'] });
      expect(throttled.status).toBe(429);
      expect(throttled.headers.get('retry-after')).toBe('1');
      expect(await throttled.json()).toMatchObject({ type: 'ThrottleException', message: expect.stringMatching(/throttling/) });

      const stats = (await (await fetch(`${url}/__stats`)).json()) as {
        countries: { JP: { getItems: Record<string, number> } };
        tokens: Record<string, number>;
      };
      expect(stats.countries.JP.getItems).toEqual({ calls: 4, items: 1, throttled: 1, errors: 2 });
      expect(stats.tokens).toEqual({ issued: 1, refused: 0 });

      child.kill('SIGTERM');
      expect(await exitOf(child)).toEqual({ code: 0, signal: null });
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('is started in-process by `all` when UPSTREAM=simulator', async () => {
    const child = spawnCli(['all'], testEnv({ PORT: '0', SIMULATOR_PORT: '0', REDIS_PREFIX: uniqueName('swt') }));
    try {
      const url = await simulatorUrlOnceReady(child);
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
      child.kill('SIGTERM');
      expect((await exitOf(child)).code).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('UPSTREAM=creators without a credential stops at start-up with a line naming it', async () => {
    const res = await runCli(['simulator'], {
      UPSTREAM: 'creators',
      COUNTRIES: 'US',
      CREATORS_CREDENTIAL_ID_US: 'id',
      CREATORS_PARTNER_TAG_US: 'tag-20',
    });
    expect(res.code).toBe(78);
    expect(res.stderr.trim().split('\n')).toEqual([
      'shelfwatch: configuration error: CREATORS_CREDENTIAL_SECRET_US is required when UPSTREAM=creators: the Creators API Credential Secret for www.amazon.com (or set UPSTREAM=simulator, or leave US out of COUNTRIES)',
    ]);
  });
});
