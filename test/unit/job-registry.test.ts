import { Backoffs, type MinimalJob } from 'bullmq';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  COUNTRY_JOB_NAMES,
  isCountryJobName,
  isJobName,
  JOB_KINDS,
  JOB_NAMES,
  kindOf,
  classOf,
  parseJob,
  priorityOf,
  type JobName,
} from '../../jobs/queues.js';
import { deliveryJob } from '../../jobs/deliver.js';
import { queueName } from '../../jobs/queue-names.js';
import { QUOTA_CLASSES } from '../../src/core/quota-classes.js';
import { isFairClass } from '../../src/fairness/fair-classes.js';
import { eanResolveJobId } from '../../src/watch/ean-imports.js';
import { DEFAULT_RETRY, FORCED_RETRY, retrySpanMs, type RetryPolicy } from '../../config/retry.js';
import { InvalidJobPayloadError } from '../../src/core/errors.js';

/** jobs/queues.ts: the one list of job kinds and what is derived from it. */

const IMPORT_ID = '65f0a1b2c3d4e5f6a7b8c9d0';
const USER_ID = '0123456789abcdef01234567';
const EAN = '4901234567894';
const ASINS = ['B00TEST001', 'B00TEST002', '4004004001'];

/** One good payload per kind, as its producer gives it. */
const GOOD: { readonly [N in JobName]: Record<string, unknown> } = {
  'forced.update': { country: 'JP', asins: ASINS, claim: 'forced-2f1c' },
  'ean.resolve': { country: 'US', importId: IMPORT_ID, userId: USER_ID, ean: EAN },
  'refresh.p1': { country: 'JP', asins: ASINS, due: 1_772_000_000_000, claim: 'c0ffee' },
  'refresh.p0': { country: 'US', asins: ['B00TEST009'] },
  'browse.crawl': { country: 'JP', nodeId: '2275256051', crawlId: 'crawl-JP-2275256051-2026-03-04' },
  deliver: {
    endpoint_id: IMPORT_ID,
    user_id: USER_ID,
    alerts: [{ id: IMPORT_ID, kind: 'price_below', price: 1_000, sequence: 1 }],
    asin: 'B00TEST001',
    country: 'JP',
    before: null,
    after: { at: 1_772_000_000_000, price: 900, currency: 'JPY', availability: 'in_stock', buybox: true, rank: 12 },
    tag: 3,
  },
};

/** The kinds whose jobs wait in a queue of their country. */
const COUNTRY_KINDS = JOB_KINDS.flatMap((k) => (k.scope === 'country' ? [k] : []));

/** The invalid payload error for `name` and `data`, or a failure if parseJob accepted it. */
function rejection(name: JobName, data: unknown): InvalidJobPayloadError {
  try {
    parseJob(name, data);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidJobPayloadError);
    return err as InvalidJobPayloadError;
  }
  expect.fail(`parseJob accepted a bad ${name} payload: ${JSON.stringify(data)}`);
}

function asins(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `B00TEST${String(i).padStart(3, '0')}`);
}

describe('the job kinds', () => {
  it('lists exactly the six kinds, each name once, and JOB_NAMES follows JOB_KINDS', () => {
    const names = JOB_KINDS.map((k) => k.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual(['browse.crawl', 'deliver', 'ean.resolve', 'forced.update', 'refresh.p0', 'refresh.p1']);
    expect(JOB_NAMES).toEqual(names);
  });

  it('queues deliveries in one queue for every country, and every other kind in its country’s', () => {
    expect(deliveryJob.scope).toBe('global');
    expect(deliveryJob.queue).toBe('deliveries');
    expect(COUNTRY_JOB_NAMES).toEqual(JOB_NAMES.filter((n) => n !== 'deliver'));
    for (const name of COUNTRY_JOB_NAMES) expect(isCountryJobName(name), name).toBe(true);
    expect(isCountryJobName('deliver')).toBe(false);
  });

  it('gives each kind a priority that BullMQ accepts (1 … 2 097 152), distinct within its queue', () => {
    const priorities = COUNTRY_KINDS.map((k) => k.priority);
    const refresh = COUNTRY_KINDS.filter((k) => k.cls === 'refresh').map((k) => k.priority);
    expect(new Set(refresh).size).toBe(refresh.length);
    for (const p of priorities) {
      expect(Number.isInteger(p)).toBe(true);
      expect(p).toBeGreaterThanOrEqual(1);
      expect(p).toBeLessThanOrEqual(2 ** 21);
    }
  });

  it('puts every kind in one of the four classes, each class a queue of its own per country', () => {
    expect(QUOTA_CLASSES).toEqual(['forced', 'import', 'refresh', 'crawl']);
    for (const k of COUNTRY_KINDS) expect(QUOTA_CLASSES, k.name).toContain(k.cls);
    expect(QUOTA_CLASSES.map((c) => queueName('JP', c))).toEqual(['forced-JP', 'import-JP', 'refresh-JP', 'crawl-JP']);
  });
});

describe('isJobName', () => {
  it('knows every kind’s name', () => {
    for (const k of JOB_KINDS) expect(isJobName(k.name), k.name).toBe(true);
  });

  it.each([
    '',
    'refresh',
    'refresh.p2',
    'REFRESH.P1',
    'forced.update ',
    'Forced.Update',
    'toString',
    'constructor',
    '__proto__',
    'hasOwnProperty',
  ])('refuses %j (names from Redis are untrusted, inherited object keys included)', (name) => {
    expect(isJobName(name)).toBe(false);
  });
});

describe('kindOf, priorityOf and classOf agree with the kind objects', () => {
  it.each(COUNTRY_KINDS.map((k) => [k.name, k] as const))('%s', (name, kind) => {
    expect(kindOf(name)).toBe(kind);
    expect(priorityOf(name)).toBe(kind.priority);
    expect(classOf(name)).toBe(kind.cls);
  });
});

describe('where and how urgently each kind runs (jobs/*.ts)', () => {
  it('runs each kind in its class: forced updates on demand, EAN pages as imports, refreshes, crawls', () => {
    expect(classOf('forced.update')).toBe('forced');
    expect(classOf('ean.resolve')).toBe('import');
    expect(classOf('refresh.p1')).toBe('refresh');
    expect(classOf('refresh.p0')).toBe('refresh');
    expect(classOf('browse.crawl')).toBe('crawl');
  });

  it('queues the kinds one account asks for fairly between accounts, and the planned refreshes by priority', () => {
    for (const name of ['forced.update', 'ean.resolve', 'browse.crawl'] as const) expect(isFairClass(classOf(name)), name).toBe(true);
    expect(isFairClass('refresh')).toBe(false);
  });

  it('runs priority-1 refreshes before priority-0 ones (lower runs first)', () => {
    expect(priorityOf('refresh.p1')).toBeLessThan(priorityOf('refresh.p0'));
  });

  it('gives the forced update the quick forced retry and every other kind the default one', () => {
    expect(kindOf('forced.update').retry).toBe(FORCED_RETRY);
    for (const name of COUNTRY_JOB_NAMES.filter((n) => n !== 'forced.update')) expect(kindOf(name).retry, name).toBe(DEFAULT_RETRY);
  });

  it('fails the forced update when the day is spent (a client waits); the other kinds wait for the next day', () => {
    expect(kindOf('forced.update').whenDaySpent).toBe('fail');
    for (const name of COUNTRY_JOB_NAMES.filter((n) => n !== 'forced.update'))
      expect(typeof kindOf(name).whenDaySpent, name).toBe('function');
  });
});

describe('parseJob accepts a good payload of each kind', () => {
  it.each(JOB_NAMES.map((n) => [n] as const))('%s', (name) => {
    const parsed = parseJob(name, GOOD[name]);
    expect(parsed).toMatchObject(GOOD[name]);
  });

  it.each(JOB_NAMES.map((n) => [n] as const))(
    '%s: parsing the parsed payload again gives the same payload (the worker parses what the producer parsed)',
    (name) => {
      const once = parseJob(name, GOOD[name]);
      expect(parseJob(name, JSON.parse(JSON.stringify(once)))).toEqual(once);
    },
  );

  it('drops fields the kind does not know (written by an older version) instead of failing the job', () => {
    const parsed = parseJob('refresh.p0', { ...GOOD['refresh.p0'], legacy: true });
    expect(parsed).not.toHaveProperty('legacy');
    expect(parsed.asins).toEqual(['B00TEST009']);
  });

  it('accepts 1 and 10 ASINs, the bounds of one getItems call', () => {
    expect(parseJob('forced.update', { country: 'JP', asins: asins(1) }).asins).toHaveLength(1);
    expect(parseJob('refresh.p1', { country: 'JP', asins: asins(10) }).asins).toHaveLength(10);
  });

  it('ean.resolve starts at page 1 and accepts the last page, 10', () => {
    expect(parseJob('ean.resolve', GOOD['ean.resolve'])).toEqual({
      country: 'US',
      importId: IMPORT_ID,
      userId: USER_ID,
      ean: EAN,
      page: 1,
    });
    expect(parseJob('ean.resolve', { ...GOOD['ean.resolve'], page: 10 }).page).toBe(10);
  });

  it('browse.crawl starts at page 1 with nothing found, and keeps a page and count it is given', () => {
    expect(parseJob('browse.crawl', { country: 'US', nodeId: '1' })).toEqual({ country: 'US', nodeId: '1', page: 1, found: 0 });
    expect(parseJob('browse.crawl', { ...GOOD['browse.crawl'], page: 4, found: 37 })).toMatchObject({ page: 4, found: 37 });
  });
});

describe('parseJob refuses a bad payload with InvalidJobPayloadError naming the job', () => {
  it.each(JOB_NAMES.map((n) => [n] as const))('%s: names the job in the message', (name) => {
    const err = rejection(name, { country: 'XX' });
    expect(err.message).toContain(`invalid ${name} payload`);
  });

  it.each(['forced.update', 'refresh.p1', 'refresh.p0'] as const)('%s: more than 10 ASINs, saying why', (name) => {
    expect(rejection(name, { country: 'JP', asins: asins(11) }).message).toMatch(/more than 10 ASINs/);
  });

  it.each(['forced.update', 'refresh.p1', 'refresh.p0'] as const)(
    '%s: no ASIN, an ASIN twice, a lower-case, 9- or 11-character ASIN',
    (name) => {
      expect(rejection(name, { country: 'JP', asins: [] }).message).toContain(name);
      expect(rejection(name, { country: 'JP', asins: ['B00TEST001', 'B00TEST002', 'B00TEST001'] }).message).toMatch(/twice/);
      // Producers upper-case at the edge; a payload in Redis must already be upper-case.
      expect(rejection(name, { country: 'JP', asins: ['b00test001'] }).message).toMatch(/10 letters or digits/);
      expect(rejection(name, { country: 'JP', asins: ['B00TEST01'] }).message).toMatch(/10 letters or digits/);
      expect(rejection(name, { country: 'JP', asins: ['B00TEST0011'] }).message).toMatch(/10 letters or digits/);
      expect(rejection(name, { country: 'JP', asins: 'B00TEST001' }).message).toContain(name);
    },
  );

  it.each(JOB_NAMES.map((n) => [n] as const))('%s: an unknown, lower-case or missing country', (name) => {
    const { country: _country, ...rest } = GOOD[name];
    for (const country of ['XX', 'jp', 'us', 'GB', '']) rejection(name, { ...GOOD[name], country });
    rejection(name, rest);
  });

  it('refresh: a fractional due time, a claim over 64 characters', () => {
    rejection('refresh.p1', { ...GOOD['refresh.p1'], due: 1.5 });
    rejection('refresh.p0', { ...GOOD['refresh.p0'], claim: 'x'.repeat(65) });
    expect(parseJob('refresh.p0', { ...GOOD['refresh.p0'], claim: 'x'.repeat(64) }).claim).toHaveLength(64);
  });

  it('forced.update: a claim over 64 characters', () => {
    rejection('forced.update', { ...GOOD['forced.update'], claim: 'x'.repeat(65) });
  });

  it.each([
    ['23 hex digits', IMPORT_ID.slice(1)],
    ['25 hex digits', `${IMPORT_ID}0`],
    ['upper-case hex', IMPORT_ID.toUpperCase()],
    ['not hex', 'zzzzzzzzzzzzzzzzzzzzzzzz'],
  ])('ean.resolve: an importId or userId that is not an objectId (%s)', (_why, id) => {
    expect(rejection('ean.resolve', { ...GOOD['ean.resolve'], importId: id }).message).toContain('ean.resolve');
    rejection('ean.resolve', { ...GOOD['ean.resolve'], userId: id });
  });

  it('ean.resolve: an EAN with a wrong check digit, of 12 or 14 digits, or not digits', () => {
    rejection('ean.resolve', { ...GOOD['ean.resolve'], ean: '4901234567890' });
    rejection('ean.resolve', { ...GOOD['ean.resolve'], ean: EAN.slice(0, 12) });
    rejection('ean.resolve', { ...GOOD['ean.resolve'], ean: `${EAN}4` });
    rejection('ean.resolve', { ...GOOD['ean.resolve'], ean: Number(EAN) });
  });

  it.each([['ean.resolve'], ['browse.crawl']] as const)(
    '%s: page 0, page 11 (past the upstream’s last page), a fractional page',
    (name) => {
      for (const page of [0, 11, 1.5, '2']) rejection(name, { ...GOOD[name], page });
    },
  );

  it('browse.crawl: a node id that is not 1 to 20 digits, a negative count, a crawl id with other characters', () => {
    for (const nodeId of ['', '12a', '1'.repeat(21), 2275256051]) rejection('browse.crawl', { ...GOOD['browse.crawl'], nodeId });
    rejection('browse.crawl', { ...GOOD['browse.crawl'], found: -1 });
    rejection('browse.crawl', { ...GOOD['browse.crawl'], crawlId: 'crawl:JP' });
    rejection('browse.crawl', { ...GOOD['browse.crawl'], crawlId: 'x'.repeat(81) });
  });

  it('refuses what is not an object at all', () => {
    for (const data of [null, undefined, 'JP', 42, []]) rejection('refresh.p1', data);
  });
});

describe('eanResolveJobId', () => {
  it('keeps the short form for page 1 and adds -p<page> for later pages', () => {
    expect(eanResolveJobId(IMPORT_ID, 'JP', 1)).toBe(`ean-${IMPORT_ID}-JP`);
    expect(eanResolveJobId(IMPORT_ID, 'JP', 2)).toBe(`ean-${IMPORT_ID}-JP-p2`);
    expect(eanResolveJobId(IMPORT_ID, 'US', 10)).toBe(`ean-${IMPORT_ID}-US-p10`);
  });

  it('gives every page and country of an import an id of its own', () => {
    const ids = ['JP', 'US'].flatMap((c) => Array.from({ length: 10 }, (_, i) => eanResolveJobId(IMPORT_ID, c, i + 1)));
    expect(new Set(ids).size).toBe(20);
  });
});

describe('retrySpanMs (config/retry.ts): the longest a job may take from its first attempt’s start to its last attempt’s end', () => {
  it('the default policy: 5 attempts and the exponential backoff of 2 + 4 + 8 + 16 s between them', () => {
    expect(DEFAULT_RETRY).toMatchObject({ attempts: 5, backoff: { type: 'exponential', delay: 2_000 } });
    expect(retrySpanMs(DEFAULT_RETRY, 60_000)).toBe(5 * 60_000 + 2_000 + 4_000 + 8_000 + 16_000);
    expect(retrySpanMs(DEFAULT_RETRY, 0)).toBe(30_000);
  });

  it('the forced policy: 3 attempts and a fixed 0.5 s between them', () => {
    expect(FORCED_RETRY).toEqual({ attempts: 3, backoff: { type: 'fixed', delay: 500 } });
    expect(retrySpanMs(FORCED_RETRY, 30_000)).toBe(3 * 30_000 + 500 + 500);
  });

  it('a single attempt has no backoff at all', () => {
    expect(retrySpanMs({ attempts: 1, backoff: { type: 'exponential', delay: 2_000 } }, 10_000)).toBe(10_000);
    expect(retrySpanMs({ attempts: 1, backoff: { type: 'fixed', delay: 500 } }, 10_000)).toBe(10_000);
  });

  describe('is never shorter than the delays BullMQ itself waits (Backoffs.calculate)', () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });

    /** BullMQ's delays before attempts 2 … attempts, with Math.random() at its largest (jitter adds nothing then). */
    function bullmqDelays(policy: RetryPolicy): number[] {
      vi.spyOn(Math, 'random').mockReturnValue(1 - Number.EPSILON);
      const job = {} as MinimalJob;
      const delays: number[] = [];
      for (let attemptsMade = 1; attemptsMade < policy.attempts; attemptsMade++) {
        delays.push(Backoffs.calculate({ ...policy.backoff }, attemptsMade, new Error('x'), job) as number);
      }
      return delays;
    }

    it.each([
      ['DEFAULT_RETRY', DEFAULT_RETRY],
      ['FORCED_RETRY', FORCED_RETRY],
    ] as const)('%s', (_name, policy) => {
      const delays = bullmqDelays(policy);
      expect(delays).toHaveLength(policy.attempts - 1);
      const timeout = 45_000;
      const longest = policy.attempts * timeout + delays.reduce((a, b) => a + b, 0);
      expect(retrySpanMs(policy, timeout)).toBeGreaterThanOrEqual(longest);
      // And not by more than jitter's rounding: the bound is tight, so the lease is not longer than it needs.
      expect(retrySpanMs(policy, timeout) - longest).toBeLessThanOrEqual(policy.attempts);
    });
  });
});
