import type { Country } from '../core/identifiers.js';
import type { Logger } from '../logger.js';
import type { UpstreamPort } from '../upstream/port.js';
import type { QuotaGovernor } from './governor.js';
import type { PermitScopes } from './permit-scope.js';
import { runProbe, type CountryBreakers } from './breaker.js';

export interface BreakerProbeDeps {
  readonly breakers: CountryBreakers;
  readonly governor: Pick<QuotaGovernor, 'onRefused'>;
  /** The governed port of each country this process serves: a probe is one call through it. */
  readonly ports: ReadonlyMap<Country, UpstreamPort>;
  readonly scopes: PermitScopes;
  readonly logger: Logger;
  /** How long a probe's call may take, its permit included. */
  readonly timeoutMs: number;
  /**
   * How often the breakers of the countries not known to be open are read: a breaker another
   * process opened is found within this even if that process is gone and no call here met it.
   */
  readonly discoverMs?: number;
}

const DISCOVER_MS = 5_000;

/**
 * Sends an open breaker's probes from a worker process: at each probe's time every process that
 * serves the country asks, one claims it (BREAKER_CLAIM_PROBE), and that one repeats the call that
 * opened the breaker. A probe that goes through closes the breaker, which resumes the queues it
 * paused; one that does not leaves it open until the next, twice as far off.
 */
export function startBreakerProbes(deps: BreakerProbeDeps): { close(): void } {
  const { breakers, ports, logger } = deps;
  const timers = new Map<Country, { at: number; timer: NodeJS.Timeout }>();
  let closed = false;

  const schedule = (country: Country, at: number): void => {
    if (closed || !ports.has(country)) return;
    const held = timers.get(country);
    if (held && held.at <= at) return;
    if (held) clearTimeout(held.timer);
    const timer = setTimeout(
      () => {
        timers.delete(country);
        void probe(country);
      },
      Math.max(0, at - Date.now()),
    );
    timer.unref();
    timers.set(country, { at, timer });
  };

  const probe = async (country: Country): Promise<void> => {
    try {
      const claim = await breakers.claimProbe(country);
      if ('closed' in claim) return;
      if ('probeAt' in claim) {
        schedule(country, claim.probeAt);
        return;
      }
      const state = { waiting: false, started: false };
      const signal = AbortSignal.timeout(deps.timeoutMs);
      try {
        await deps.scopes.run({ cls: 'refresh', rank: 0, signal, state, probe: true }, () => runProbe(ports.get(country)!, claim.probe));
      } catch (err) {
        logger.debug({ country, err: { name: (err as Error).name, message: (err as Error).message } }, 'breaker probe refused');
        schedule(country, claim.nextAt);
        return;
      }
      await breakers.close(country);
    } catch (err) {
      // Redis away: the discovery poll finds the breaker again.
      logger.warn({ country, err: { message: (err as Error).message } }, 'breaker probe could not run');
    }
  };

  const discover = async (): Promise<void> => {
    for (const country of ports.keys()) {
      if (timers.has(country)) continue;
      const status = await breakers.status(country).catch(() => undefined);
      if (status?.state === 'open') schedule(country, status.probeAt);
    }
  };
  const unsubscribe = [breakers.onOpen(schedule), deps.governor.onRefused(schedule)];
  const poll = setInterval(() => void discover(), deps.discoverMs ?? DISCOVER_MS);
  poll.unref();
  void discover();
  return {
    close() {
      closed = true;
      clearInterval(poll);
      for (const { timer } of timers.values()) clearTimeout(timer);
      timers.clear();
      for (const off of unsubscribe) off();
    },
  };
}
