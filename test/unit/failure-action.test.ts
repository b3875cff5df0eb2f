import { describe, expect, it, vi } from 'vitest';
import { failureAction } from '../../jobs/failure.js';
import type { CountryJobKind } from '../../jobs/kind.js';
import { kindOf } from '../../jobs/queues.js';
import {
  DayQuotaSpentError,
  GovernorClosedError,
  InvalidJobPayloadError,
  JobTimeoutError,
  RateLimitedError,
  RetryableError,
  UnrecoverableError,
  UpstreamAuthError,
  UpstreamInvalidRequestError,
  UpstreamNotEligibleError,
  UpstreamRateLimitedError,
  UpstreamUnavailableError,
} from '../../src/core/errors.js';

/**
 * jobs/failure.ts: what becomes of a job whose attempt threw, decided by the error's class
 * alone. The processor carries the decision out; these tests pin the decision itself.
 */

type DaySpentKind = Pick<CountryJobKind, 'whenDaySpent'>;

/** A kind whose client waits for it (the forced update): a spent day fails the job now. */
const failsWhenDaySpent: DaySpentKind = { whenDaySpent: 'fail' };

/** A kind that waits for the next quota day (refreshes, EAN pages, crawls). */
function waitsWhenDaySpent(): DaySpentKind & { whenDaySpent: ReturnType<typeof vi.fn> } {
  return { whenDaySpent: vi.fn(async () => undefined) };
}

const RETRY_AT = Date.parse('2026-03-05T15:00:00Z');

describe('failureAction: the day’s quota is spent (DayQuotaSpentError)', () => {
  it.each(['cap', 'share', 'spent'] as const)(
    'fails at once (fail_day_spent) for a kind whose whenDaySpent is "fail" (reason %s)',
    (reason) => {
      const err = new DayQuotaSpentError('JP', reason, RETRY_AT);
      expect(failureAction(err, failsWhenDaySpent)).toEqual({ action: 'fail_day_spent' });
    },
  );

  it('waits for the next quota day (wait_next_day) until exactly the error’s retryAt for a kind with a whenDaySpent function', () => {
    const kind = waitsWhenDaySpent();
    expect(failureAction(new DayQuotaSpentError('US', 'cap', RETRY_AT), kind)).toEqual({ action: 'wait_next_day', until: RETRY_AT });
    // A different retryAt is carried through, not a constant or "now + a day".
    expect(failureAction(new DayQuotaSpentError('US', 'share', RETRY_AT + 1), kind)).toEqual({
      action: 'wait_next_day',
      until: RETRY_AT + 1,
    });
  });

  it('only decides: it does not call the kind’s whenDaySpent itself (the processor does, once)', () => {
    const kind = waitsWhenDaySpent();
    failureAction(new DayQuotaSpentError('JP', 'cap', RETRY_AT), kind);
    expect(kind.whenDaySpent).not.toHaveBeenCalled();
  });

  it('fails at once when the job’s kind is unknown (no kind: the payload or name was bad before the kind was found)', () => {
    expect(failureAction(new DayQuotaSpentError('JP', 'cap', RETRY_AT), undefined)).toEqual({ action: 'fail_day_spent' });
  });

  it('is decided before the RetryableError branch, although DayQuotaSpentError is a RetryableError', () => {
    const err = new DayQuotaSpentError('JP', 'cap', RETRY_AT);
    expect(err).toBeInstanceOf(RetryableError);
    expect(failureAction(err, waitsWhenDaySpent()).action).toBe('wait_next_day');
  });

  it('matches what the registered kinds say: forced.update fails, the other kinds wait for the next day', () => {
    const err = new DayQuotaSpentError('JP', 'cap', RETRY_AT);
    expect(failureAction(err, kindOf('forced.update'))).toEqual({ action: 'fail_day_spent' });
    for (const name of ['ean.resolve', 'refresh.p1', 'refresh.p0', 'browse.crawl'] as const) {
      expect(failureAction(err, kindOf(name)), name).toEqual({ action: 'wait_next_day', until: RETRY_AT });
    }
  });
});

describe('failureAction: throttled (RateLimitedError)', () => {
  it('waits retryAfterMs for a RateLimitedError, whatever the kind', () => {
    expect(failureAction(new RateLimitedError('slow down', 1_500), undefined)).toEqual({ action: 'wait', ms: 1_500 });
    expect(failureAction(new RateLimitedError('slow down', 1_500), failsWhenDaySpent)).toEqual({ action: 'wait', ms: 1_500 });
    expect(failureAction(new RateLimitedError('slow down', 1_500), waitsWhenDaySpent())).toEqual({ action: 'wait', ms: 1_500 });
  });

  it('waits retryAfterMs for the subclass UpstreamRateLimitedError', () => {
    const err = new UpstreamRateLimitedError('JP', 2_500, 'RequestThrottled');
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(failureAction(err, waitsWhenDaySpent())).toEqual({ action: 'wait', ms: 2_500 });
  });

  it.each([0, 0.4, -250])('waits at least 1 ms (a delay of 0 would not delay the job): retryAfterMs %d → 1', (retryAfterMs) => {
    expect(failureAction(new RateLimitedError('slow down', retryAfterMs), undefined)).toEqual({ action: 'wait', ms: 1 });
    expect(failureAction(new UpstreamRateLimitedError('US', retryAfterMs), undefined)).toEqual({ action: 'wait', ms: 1 });
  });
});

describe('failureAction: the credential or the account is gone', () => {
  it.each([
    ['UpstreamAuthError', new UpstreamAuthError('JP', 'invalid_client', 'refused')],
    ['UpstreamNotEligibleError', new UpstreamNotEligibleError('US', 'AssociateNotEligible', 'too few sales')],
  ])('stops the country for %s, although it is an UnrecoverableError (checked first)', (_name, err) => {
    // The precondition that makes the order matter: the generic "fail" branch would also match.
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(failureAction(err, undefined)).toEqual({ action: 'stop_country' });
    expect(failureAction(err, failsWhenDaySpent)).toEqual({ action: 'stop_country' });
    expect(failureAction(err, waitsWhenDaySpent())).toEqual({ action: 'stop_country' });
  });
});

describe('failureAction: no retry helps', () => {
  it.each([
    ['UnrecoverableError', new UnrecoverableError('bad input')],
    ['UpstreamInvalidRequestError', new UpstreamInvalidRequestError('ValidationException', 'InvalidParameterValue')],
    ['InvalidJobPayloadError', new InvalidJobPayloadError('invalid refresh.p1 payload: …')],
  ])('fails the job for %s', (_name, err) => {
    expect(failureAction(err, undefined)).toEqual({ action: 'fail' });
    expect(failureAction(err, waitsWhenDaySpent())).toEqual({ action: 'fail' });
  });
});

describe('failureAction: anything else retries with the kind’s backoff', () => {
  it.each([
    ['RetryableError', new RetryableError('flaky')],
    ['UpstreamUnavailableError', new UpstreamUnavailableError('502 from upstream', 502)],
    ['JobTimeoutError', new JobTimeoutError('job still running after 60000 ms')],
    ['GovernorClosedError', new GovernorClosedError('the quota governor is closed')],
    ['a plain Error', new Error('socket hang up')],
    ['a TypeError', new TypeError('cannot read properties of undefined')],
  ])('retries %s', (_name, err) => {
    expect(failureAction(err, undefined)).toEqual({ action: 'retry' });
    expect(failureAction(err, failsWhenDaySpent)).toEqual({ action: 'retry' });
  });

  it.each([
    ['a string', 'boom'],
    ['undefined', undefined],
    ['null', null],
    ['a number', 429],
  ])('retries a thrown non-Error value (%s)', (_name, value) => {
    expect(failureAction(value, waitsWhenDaySpent())).toEqual({ action: 'retry' });
  });
});

describe('failureAction decides by class, never by message or name', () => {
  it('retries a plain Error whose message reads like a DayQuotaSpentError', () => {
    const err = new Error(
      `DayQuotaSpentError: today's upstream quota in JP is spent (QUOTA_PER_DAY); it renews at ${new Date(RETRY_AT).toISOString()}`,
    );
    expect(failureAction(err, waitsWhenDaySpent())).toEqual({ action: 'retry' });
    expect(failureAction(err, failsWhenDaySpent)).toEqual({ action: 'retry' });
  });

  it('retries a plain Error renamed DayQuotaSpentError and carrying a retryAt', () => {
    const err = Object.assign(new Error('quota spent'), { name: 'DayQuotaSpentError', retryAt: RETRY_AT });
    expect(failureAction(err, waitsWhenDaySpent())).toEqual({ action: 'retry' });
  });

  it('retries plain Errors renamed after the other classes (rate limit, auth, unrecoverable)', () => {
    const lookalikes = [
      Object.assign(new Error('throttled'), { name: 'UpstreamRateLimitedError', retryAfterMs: 1_000 }),
      Object.assign(new Error('refused'), { name: 'UpstreamAuthError' }),
      Object.assign(new Error('not eligible'), { name: 'UpstreamNotEligibleError' }),
      Object.assign(new Error('bad'), { name: 'UnrecoverableError' }),
      Object.assign(new Error('bad'), { name: 'InvalidJobPayloadError' }),
    ];
    for (const err of lookalikes) expect(failureAction(err, undefined), err.name).toEqual({ action: 'retry' });
  });

  it('retries a plain object shaped like a DayQuotaSpentError (data from Redis is not an instance)', () => {
    const shaped = { name: 'DayQuotaSpentError', message: 'quota spent', retryAt: RETRY_AT, reason: 'cap', country: 'JP' };
    expect(failureAction(shaped, waitsWhenDaySpent())).toEqual({ action: 'retry' });
  });
});
