import { describe, expect, it } from 'vitest';
import { isSecretName, redactUrlText, withoutSecretValues } from '../../config/secrets.js';

describe('the secrets rule', () => {
  it('knows secret variables by their names, with or without a country suffix', () => {
    for (const name of [
      'APP_KEY',
      'BULL_BOARD_PASSWORD',
      'SIMULATOR_CLIENT_SECRET',
      'CREATORS_CREDENTIAL_SECRET_JP',
      'CREATORS_CREDENTIAL_SECRET_US',
    ]) {
      expect(isSecretName(name), name).toBe(true);
    }
    for (const name of [
      'CREATORS_CREDENTIAL_ID_JP',
      'CREATORS_TOKEN_URL_US',
      'SIMULATOR_TOKEN_TTL_S',
      'BULL_BOARD_USER',
      'REDIS_PREFIX',
      'PORT',
    ]) {
      expect(isSecretName(name), name).toBe(false);
    }
  });

  it('masks URL passwords and secret query parameters, and leaves the rest as written', () => {
    expect(redactUrlText('mongodb://u:p@h1:1,h2:2/db?replicaSet=rs&password=x')).toBe(
      'mongodb://u:***@h1:1,h2:2/db?replicaSet=rs&password=***',
    );
    expect(redactUrlText('redis://:pw@cache:6379')).toBe('redis://:***@cache:6379');
    expect(redactUrlText('redis://user@cache')).toBe('redis://user@cache');
    expect(redactUrlText('not a url at all')).toBe('not a url at all');
  });
  it('takes the value of any secret variable, and any URL password, out of every problem line', () => {
    const env = { BULL_BOARD_PASSWORD: 'hunter2pw', REDIS_URL: 'redis://:redisPw77@cache', HOST: 'hunter2pw-host' };
    expect(withoutSecretValues(['X is hunter2pw', 'Y tried redisPw77', 'HOST hunter2pw-host'], env)).toEqual([
      'X is [REDACTED]',
      'Y tried [REDACTED]',
      'HOST [REDACTED]-host',
    ]);
  });
});
