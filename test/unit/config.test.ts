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
    [{ MONGODB_URI: 'http://x' }, /^MONGODB_URI must be a mongodb:\/\/ or mongodb\+srv:\/\/ connection string/],
    [{ MONGODB_URI: 'mongodb://' }, /^MONGODB_URI must be a mongodb:\/\/ or mongodb\+srv:\/\/ connection string/],
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

  // As `true`: a list that trusts every address lets any client write the X-Forwarded-For entry
  // that Express takes for its address (rate limits, logs).
  it.each([
    '0.0.0.0/0',
    '::/0',
    '0/0',
    ' 0.0.0.0/0 ',
    'loopback, ::/0',
    '10.0.0.0/8 , 0.0.0.0/0',
    '0.0.0.0/00',
    '::0/0',
    '0:0:0:0:0:0:0:0/0',
    '1.2.3.4/0',
    '10.0.0.0/0.0.0.0',
    '::ffff:0.0.0.0/96',
    '0.0.0.0/1, 128.0.0.0/1',
    '::/1,8000::/1',
  ])('refuses TRUST_PROXY=%j: it trusts every address', (value) => {
    expect(problemsOf({ TRUST_PROXY: value })).toEqual([expect.stringMatching(/^TRUST_PROXY .*every address.*forge/)]);
  });

  it.each(['loopback, 10.0.0.0/8', 'uniquelocal,linklocal', '10.0.0.0/255.0.0.0', '2001:db8::/32', '::ffff:10.0.0.0/104', '192.0.2.7'])(
    'accepts TRUST_PROXY=%j',
    (value) => {
      expect(loadConfig({ TRUST_PROXY: value }).http.trustProxy).toBe(value);
    },
  );

  it.each(['proxy.internal', '10.0.0.0/33', '10.0.0.0/255.0.255.0', '10.0.0.0/8,,'])(
    'refuses TRUST_PROXY=%j: not an address list',
    (value) => {
      expect(problemsOf({ TRUST_PROXY: value })).toEqual([expect.stringMatching(/^TRUST_PROXY .*address/)]);
    },
  );

  it('round-trips generated app keys', () => {
    const key = generateAppKey();
    expect(parseAppKey(key)).toHaveLength(32);
    expect(loadConfig({ APP_KEY: key, MONGODB_URI: 'mongodb://h/db' }).appKey).toEqual(parseAppKey(key));
  });

  it.each([
    'mongodb://db1:27017,db2:27017,db3:27017/shelfwatch?replicaSet=rs0',
    'mongodb://shelfwatch:p%40ss@db1,db2/shelfwatch?replicaSet=rs0&authSource=admin',
    'mongodb+srv://shelfwatch:secret@cluster0.example.net/shelfwatch',
    'mongodb://[::1]:27017/shelfwatch',
  ])('takes the MongoDB connection string %s (replica sets list their hosts)', (uri) => {
    expect(loadConfig({ APP_KEY: generateAppKey(), MONGODB_URI: uri }).mongo.uri).toBe(uri);
  });
});

describe('quota and lease configuration', () => {
  it('takes decimal rates, a burst, a quota day zone and the forced-update shares', () => {
    const c = loadConfig({ QUOTA_RPS: '0.5', QUOTA_BURST_US: '3', QUOTA_DAY_TZ: 'America/Los_Angeles', FORCED_SHARE: '0.25' });
    expect(c.quota.quotas.JP).toEqual({ perSecond: 0.5, burst: 1, perDay: 8_640 });
    expect(c.quota.quotas.US.burst).toBe(3);
    expect(c.quota.dayTimeZone).toBe('America/Los_Angeles');
    expect(c.quota.shares).toEqual({ forced: 0.25, import: 0.1, refresh: 0.55, crawl: 0.1 });
    expect(c.workers.concurrency('JP')).toBe(2);
    expect(c.redis.prefix).toBe('shelfwatch');
    expect(c.workers.countries).toEqual(['JP', 'US']);
    expect(loadConfig({ WORKER_COUNTRIES: 'us' }).workers.countries).toEqual(['US']);
    // A prefix in braces (a single Redis Cluster tag) is taken without them: the tags are per country now.
    expect(loadConfig({ REDIS_PREFIX: '{mine}' }).redis.prefix).toBe('mine');
    expect(loadConfig({ REDIS_CLUSTER_NODES: '127.0.0.1:7000, [::1]:7001' }).redis.cluster).toEqual([
      { host: '127.0.0.1', port: 7000 },
      { host: '::1', port: 7001 },
    ]);
  });

  it("derives a lease that outlasts a refresh job's whole retry schedule, and refuses a shorter one", () => {
    // 5 attempts of up to 2 min, backoff 2 + 4 + 8 + 16 s, and a minute for the wait in the queue.
    expect(loadConfig({}).workers.scheduler.leaseMs).toBe(5 * 120_000 + 30_000 + 60_000);
    expect(loadConfig({ WORKER_JOB_TIMEOUT: '10s' }).workers.scheduler.leaseMs).toBe(5 * 10_000 + 30_000 + 60_000);
    expect(problemsOf({ SCHEDULER_LEASE: '5m' })).toEqual([expect.stringMatching(/^SCHEDULER_LEASE must be at least 690s/)]);
    expect(loadConfig({ SCHEDULER_LEASE: '1h' }).workers.scheduler.leaseMs).toBe(3_600_000);
  });

  it.each([
    [{ QUOTA_RPS: '0' }, /^QUOTA_RPS must be at least/],
    [{ QUOTA_DAY_TZ: 'Nowhere/Land' }, /^QUOTA_DAY_TZ must be an IANA time zone/],
    [{ FORCED_SHARE: '1.5' }, /^FORCED_SHARE must be at most 0.9/],
    [{ FORCED_SHARE: '0.5', IMPORT_SHARE: '0.3', CRAWL_SHARE: '0.2' }, /^FORCED_SHARE \+ IMPORT_SHARE \+ CRAWL_SHARE must be at most 0.9/],
    [{ REDIS_PREFIX: '{open' }, /^REDIS_PREFIX /],
    [{ REDIS_CLUSTER_NODES: '127.0.0.1' }, /^REDIS_CLUSTER_NODES must be a comma-separated list of host:port/],
    [{ REDIS_CLUSTER_NODES: 'redis:70000' }, /^REDIS_CLUSTER_NODES /],
    [{ COUNTRIES: 'JP', WORKER_COUNTRIES: 'JP,US' }, /^WORKER_COUNTRIES names US, which COUNTRIES \(JP\) does not/],
    [{ WORKER_COUNTRIES: 'XX' }, /^WORKER_COUNTRIES must be a comma list of/],
  ])('refuses %j', (env, line) => {
    expect(problemsOf(env)).toEqual([expect.stringMatching(line)]);
  });
});
