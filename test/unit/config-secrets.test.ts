import { describe, expect, it } from 'vitest';
import { configProblems } from '../helpers/config.js';
import { runCli } from '../helpers/cli.js';

/**
 * A configuration error names the variable and says what is wrong, and never shows a secret: not
 * the value of a secret variable, not a password inside a URL, however else the value is broken.
 */

const CREATORS = {
  UPSTREAM: 'creators',
  COUNTRIES: 'JP,US',
  CREATORS_CREDENTIAL_ID_JP: 'id-jp',
  CREATORS_CREDENTIAL_SECRET_JP: 'fine-secret-jp',
  CREATORS_PARTNER_TAG_JP: 'tag-22',
  CREATORS_CREDENTIAL_ID_US: 'id-us',
  CREATORS_CREDENTIAL_SECRET_US: 'fine-secret-us',
  CREATORS_PARTNER_TAG_US: 'tag-20',
};

/** The problem lines of `env`, checked to name `name` and to contain none of `secrets`. */
function refused(env: Record<string, string>, name: string, secrets: readonly string[]): string[] {
  const problems = configProblems(env);
  expect(
    problems.some((p) => p.startsWith(`${name} `)),
    `${name} named in ${JSON.stringify(problems)}`,
  ).toBe(true);
  for (const secret of secrets) expect(problems.join('\n')).not.toContain(secret);
  return problems;
}

describe('secret variables', () => {
  it.each([
    ['BULL_BOARD_PASSWORD', { BULL_BOARD_USER: 'ops', BULL_BOARD_PASSWORD: 'hunter2pw' }, 'hunter2pw'],
    ['APP_KEY', { APP_KEY: 'base64:not-a-real-key-value' }, 'not-a-real-key-value'],
    ['APP_KEY', { APP_KEY: 'plain-text-app-key-0123456789' }, 'plain-text-app-key-0123456789'],
    ['SIMULATOR_CLIENT_SECRET', { SIMULATOR_CLIENT_SECRET: 'sim secret\r' }, 'sim secret'],
    ['CREATORS_CREDENTIAL_SECRET_JP', { ...CREATORS, CREATORS_CREDENTIAL_SECRET_JP: 'jp-secret-pasted\r' }, 'jp-secret-pasted'],
    ['CREATORS_CREDENTIAL_SECRET_US', { ...CREATORS, CREATORS_CREDENTIAL_SECRET_US: 'us secret with spaces' }, 'us secret with spaces'],
  ])('%s: an invalid value is named, never shown', (name, env, secret) => {
    refused(env, name, [secret]);
  });
});

describe('URLs with a password', () => {
  it.each([
    ['MONGODB_URI', 'http://admin:mongoPw77@db:27017/shelfwatch', 'mongoPw77'],
    ['MONGODB_URI', 'mongodb://admin:mongoPw77@db:99999999/shelfwatch', 'mongoPw77'],
    ['MONGODB_URI', 'mongodb://admin:mongo@Pw:77@db:port/shelfwatch', 'mongo@Pw:77'],
    ['MONGODB_URI', 'mongo://admin:mongoPw77@db/shelfwatch?authSource=admin', 'mongoPw77'],
    ['REDIS_URL', 'http://:redisPw77@cache:6379', 'redisPw77'],
    ['REDIS_URL', 'redis://default:redisPw77@cache:notaport/0', 'redisPw77'],
    ['REDIS_URL', 'default:redisPw77@cache:6379', 'redisPw77'],
    ['REDIS_URL', 'tcp://cache:6379/0?password=redisPw77', 'redisPw77'],
    ['APP_URL', 'ftp://user:appUrlPw77@example.com', 'appUrlPw77'],
    ['SIMULATOR_URL', 'ws://user:simPw77@sim:1', 'simPw77'],
    ['CREATORS_API_URL', 'file://user:apiPw77@x/y', 'apiPw77'],
  ])('%s=%s is named without its password', (name, value, secret) => {
    refused({ [name]: value, APP_KEY: 'base64:' + 'A'.repeat(43) + '=' }, name, [secret]);
  });

  it('in a per-country token endpoint is named without its password', () => {
    refused({ ...CREATORS, CREATORS_TOKEN_URL_JP: 'ftp://id:tokenUrlPw77@auth.example' }, 'CREATORS_TOKEN_URL_JP', ['tokenUrlPw77']);
  });

  it('keep what helps to find the mistake', () => {
    const [line] = configProblems({ REDIS_URL: 'http://default:redisPw77@cache:6379/0' });
    expect(line).toBe('REDIS_URL must be a redis:// URL (got "http://default:***@cache:6379/0")');
  });
});

describe('the CLI', () => {
  it('exits 78 with lines that name each bad variable and show no secret', async () => {
    const secrets = ['hunter2pw', 'mongoPw77', 'redisPw77', 'not-a-real-key-value', 'jp-secret'];
    const res = await runCli(['queues:status'], {
      BULL_BOARD_USER: 'ops',
      BULL_BOARD_PASSWORD: 'hunter2pw',
      MONGODB_URI: 'mongodb://admin:mongoPw77@db:99999999/shelfwatch',
      REDIS_URL: 'http://:redisPw77@cache:6379',
      APP_KEY: 'base64:not-a-real-key-value',
      ...CREATORS,
      CREATORS_CREDENTIAL_SECRET_JP: 'jp-secret\r',
    });
    expect(res.code).toBe(78);
    for (const name of ['BULL_BOARD_PASSWORD', 'MONGODB_URI', 'REDIS_URL']) expect(res.stderr).toContain(`configuration error: ${name} `);
    for (const secret of secrets) {
      expect(res.stderr).not.toContain(secret);
      expect(res.stdout).not.toContain(secret);
    }
  });
});
