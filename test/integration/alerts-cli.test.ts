import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { cliDatabase } from '../helpers/context.js';

// The CLI runs as a child process on a database of this file's own.
const db = cliDatabase('sw_cli_alerts');
const { env } = db;
afterAll(() => db.close());

describe('alerts:list --email', () => {
  it("prints the user's alerts, newest first, one JSON line each, and never the secret", async () => {
    const created = await runCli(['users:create', '--name', 'Ann', '--email', 'ann@example.com'], env);
    expect(created.code, created.stderr).toBe(0);
    const { token } = JSON.parse(created.stdout) as { token: string };
    // Made through the service the route uses, on the same database, as an operator's user would.
    const { loadConfig } = await import('../../config/env.js');
    const { createLogger } = await import('../../src/logger.js');
    const { buildContext } = await import('../../src/app/context.js');
    const config = loadConfig({ ...env, LOG_LEVEL: 'silent' });
    const ctx = await buildContext(config, createLogger(config), { embedded: 'attach', ensureIndexes: true, defaultMetrics: false });
    let secrets: string[];
    try {
      const user = (await ctx.users.findByToken(token))!;
      secrets = [];
      for (const [asin, kind] of [
        ['B0CLIALRT1', 'any_change'],
        ['B0CLIALRT2', 'back_in_stock'],
      ] as const) {
        const made = await ctx.alerts.create(user._id, {
          asin,
          country: 'JP',
          kind,
          price: null,
          percent: null,
          webhookUrl: 'https://93.184.216.34/hook',
        });
        secrets.push(made.secret!);
      }
    } finally {
      await ctx.resources.close();
    }
    const res = await runCli(['alerts:list', '--email', 'ann@example.com'], env);
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines.map((l) => JSON.parse(l) as { asin: string; kind: string; active: boolean })).toMatchObject([
      { asin: 'B0CLIALRT2', kind: 'back_in_stock', active: true },
      { asin: 'B0CLIALRT1', kind: 'any_change', active: true },
    ]);
    for (const s of secrets) expect(res.stdout).not.toContain(s.slice(6));
  });

  it('exits 1 for an unknown email and 2 without --email', async () => {
    const unknown = await runCli(['alerts:list', '--email', 'nobody@example.com'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no user with email/);
    expect((await runCli(['alerts:list'], env)).code).toBe(2);
  });
});
