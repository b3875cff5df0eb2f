/**
 * How often the test button may send: so that it can neither flood a target (one's own or a
 * stranger's) nor the operator's SMTP account, nor tie up the process. Counted in Redis, shared by
 * every api process: tests to one endpoint an hour (ALERT_TESTS_PER_HOUR) and tests of one account
 * a day (ALERT_TESTS_PER_DAY), each a fixed window from its first test; and, in this process, tests
 * under way at once (ALERT_TESTS_IN_FLIGHT).
 */
import type { Types } from 'mongoose';
import type { AlertTestLimits as TestLimitsConfig } from '../../../config/alerts.js';
import type { Redis } from '../../db/redis.js';
import { giveBackToWindows, takeFromWindows, type CounterWindow } from '../../db/window-counters.js';
import { sharedTag } from '../../db/redis-keys.js';
import { ServiceUnavailableError, TooManyRequestsError } from '../../core/errors.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

interface Window extends CounterWindow {
  readonly refusal: string;
}

/** A test the limits let through: `release` when it is done (sent or not). */
export interface TestPermit {
  release(): void;
}

export class TestSendLimits {
  private inFlight = 0;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limits: TestLimitsConfig,
  ) {}

  /** Tests under way in this process now. */
  get running(): number {
    return this.inFlight;
  }

  /**
   * A place for one test of the account to the endpoint. TooManyRequestsError (429, Retry-After:
   * when the full window renews) past a limit; ServiceUnavailableError (503, Retry-After 1) when
   * the process already sends ALERT_TESTS_IN_FLIGHT tests: that is the server being busy, not the
   * account's allowance, which it then gives back.
   */
  async acquire(userId: Types.ObjectId, endpointId: Types.ObjectId): Promise<TestPermit> {
    const windows = this.windows(userId, endpointId);
    const taken = await takeFromWindows(this.redis, windows);
    if (!taken.ok) throw new TooManyRequestsError(windows[taken.full]!.refusal, taken.retryAfterMs / 1_000);
    if (this.inFlight >= this.limits.inFlight) {
      await giveBackToWindows(
        this.redis,
        windows.map((w) => w.key),
      );
      throw new ServiceUnavailableError('Too many tests are being sent right now; try again in a moment.', 1);
    }
    this.inFlight++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.inFlight--;
      },
    };
  }

  /** The counted windows (a limit of 0 is off). One hash tag: the script touches them together. */
  private windows(userId: Types.ObjectId, endpointId: Types.ObjectId): Window[] {
    const tag = sharedTag(this.prefix, 'tests');
    const { perTargetPerHour, perAccountPerDay } = this.limits;
    return [
      {
        key: `${tag}:endpoint:${endpointId.toHexString()}`,
        limit: perTargetPerHour,
        ms: HOUR_MS,
        refusal: `This alert's target was sent ${perTargetPerHour} tests in the last hour (ALERT_TESTS_PER_HOUR); try again later.`,
      },
      {
        key: `${tag}:account:${userId.toHexString()}`,
        limit: perAccountPerDay,
        ms: DAY_MS,
        refusal: `You may send at most ${perAccountPerDay} tests a day (ALERT_TESTS_PER_DAY); try again later.`,
      },
    ].filter((w) => w.limit > 0);
  }
}
