import type { Redis } from 'ioredis';
import { pino } from 'pino';
import type { Country } from '../../src/core/identifiers.js';
import type { QuotaClass } from '../../src/core/quota-classes.js';
import { CountryBreakers, type BreakerOptions } from '../../src/quota/breaker.js';

/** Queues that only remember whether they are paused: `paused` lists them as `CC:class`. */
export function fakeQueues(): { paused: Set<string>; of: (country: Country, cls: QuotaClass) => FakeQueue } {
  const paused = new Set<string>();
  return {
    paused,
    of: (country, cls) => ({
      isPaused: async () => paused.has(`${country}:${cls}`),
      pause: async () => void paused.add(`${country}:${cls}`),
      resume: async () => void paused.delete(`${country}:${cls}`),
    }),
  };
}
type FakeQueue = { isPaused(): Promise<boolean>; pause(): Promise<void>; resume(): Promise<void> };

/** Breakers on a real Redis with fake queues and a silent log. */
export function testBreakers(
  redis: Redis,
  prefix: string,
  options: Partial<BreakerOptions> = {},
): { breakers: CountryBreakers; queues: ReturnType<typeof fakeQueues> } {
  const queues = fakeQueues();
  const breakers = new CountryBreakers({
    redis,
    prefix,
    options: { windowMs: 30_000, probeBaseMs: 5_000, probeMaxMs: 120_000, ...options },
    queues: queues.of,
    logger: pino({ level: 'silent' }),
  });
  return { breakers, queues };
}
