import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/env.js';
import { configProblems } from '../helpers/config.js';
import { generateAppKey, parseAppKey } from '../../config/app-key.js';

const problemsOf = configProblems;

describe('configuration', () => {
  it('has defaults for everything on the embedded default', () => {
    const c = loadConfig({});
    expect(c.http.port).toBe(3000);
    expect(c.timeZone).toBe('UTC');
    expect(c.mongo.uri).toBeUndefined();
    expect(c.appKey).toBeUndefined();
    expect(Object.isFrozen(c)).toBe(true);
  });

  it.each([
    [{ PORT: 'abc' }, /^PORT .*"abc"/],
    [{ PORT: '70000' }, /^PORT must be at most 65535/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL /],
    [{ APP_TIMEZONE: 'Mars/Olympus' }, /^APP_TIMEZONE must be an IANA time zone/],
    [{ MONGODB_URI: 'http://x' }, /^MONGODB_URI must be a mongodb:\/\/ URL/],
    [{ REDIS_URL: 'nope' }, /^REDIS_URL must be a redis:\/\/ URL/],
    [{ TRUST_PROXY: 'true' }, /^TRUST_PROXY .*forge/],
    [{ APP_KEY: 'short' }, /^APP_KEY must be "base64:"/],
    [{ MONGODB_URI: 'mongodb://db:27017/x' }, /^APP_KEY is required when MONGODB_URI is set/],
  ])('refuses %j with a line naming the variable', (env, line) => {
    const problems = problemsOf(env);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(line);
  });

  it('reports every bad variable, one line each', () => {
    expect(problemsOf({ PORT: 'x', LOG_LEVEL: 'y' })).toHaveLength(2);
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ PORT: '', APP_TIMEZONE: '' }).http.port).toBe(3000);
  });

  it('parses TRUST_PROXY as hops or a list', () => {
    expect(loadConfig({ TRUST_PROXY: '2' }).http.trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '0' }).http.trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).http.trustProxy).toBe('loopback, 10.0.0.0/8');
  });

  it('round-trips generated app keys', () => {
    const key = generateAppKey();
    expect(parseAppKey(key)).toHaveLength(32);
    expect(loadConfig({ APP_KEY: key, MONGODB_URI: 'mongodb://h/db' }).appKey).toEqual(parseAppKey(key));
  });
});
