/**
 * The forced updates of bench:tenants. The heavy account asks as fast as the api lets it: several
 * requests always in flight, each lane pausing for Retry-After when refused (RATE_LIMIT_UPDATE
 * counts a minute, so its requests come in a burst at the start of each minute, the hardest case
 * for everyone else's). The light accounts ask now and then: a Poisson stream over all of them,
 * each request for a few of one account's own ASINs in one country.
 */
import type { UpdateSample } from './update-load.js';

export interface TimedSample extends UpdateSample {
  /** Epoch ms when the request was sent. */
  readonly startMs: number;
}

export interface UpdateDriver {
  /** Every request's outcome; status -1: still unanswered when the driver stopped. */
  readonly samples: readonly TimedSample[];
  /** Stops sending and waits (at most `drainMs`) for the requests in flight. */
  stop(drainMs: number): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function pick<T>(pool: readonly T[], n: number): T[] {
  const copy = [...pool];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, Math.min(n, copy.length));
}

/** One request, timed from its start, and the Retry-After of a refusal (s). */
async function timedUpdate(
  apiUrl: string,
  token: string,
  country: string,
  asins: readonly string[],
): Promise<{ sample: TimedSample; retryAfterS: number | null }> {
  const startMs = Date.now();
  const started = performance.now();
  const url = `${apiUrl}/api/world/update?country=${country}&asin=${asins.join(',')}`;
  try {
    const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(60_000) });
    await res.arrayBuffer();
    const retry = res.headers.get('retry-after');
    return {
      sample: { startMs, atMs: Date.now(), latencyMs: performance.now() - started, status: res.status },
      retryAfterS: retry === null ? null : Number(retry),
    };
  } catch {
    return { sample: { startMs, atMs: Date.now(), latencyMs: performance.now() - started, status: 0 }, retryAfterS: null };
  }
}

/** Requests the heavy account keeps in flight: more than the api lets through at once, so the limit, not this, binds. */
const HEAVY_LANES = 10;
/** A lane's pause after a failure without Retry-After. */
const HEAVY_BACKOFF_MS = 1_000;

export function hammerUpdates(apiUrl: string, token: string, asins: readonly string[], countries: readonly string[]): UpdateDriver {
  const samples: TimedSample[] = [];
  let stopped = false;
  let wake: (() => void) | undefined;
  const stopping = new Promise<void>((resolve) => (wake = resolve));
  const lane = async (): Promise<void> => {
    while (!stopped) {
      const country = countries[Math.floor(Math.random() * countries.length)]!;
      const { sample, retryAfterS } = await timedUpdate(apiUrl, token, country, pick(asins, 10));
      samples.push(sample);
      // Refused: wait for the window the api names (the limit counts a minute), or until the stop.
      const pause =
        sample.status === 429 && retryAfterS !== null
          ? retryAfterS * 1_000
          : sample.status >= 400 || sample.status === 0
            ? HEAVY_BACKOFF_MS
            : 0;
      if (pause > 0) await Promise.race([sleep(pause), stopping]);
    }
  };
  const lanes = Array.from({ length: HEAVY_LANES }, lane);
  return {
    samples,
    async stop(drainMs) {
      stopped = true;
      wake?.();
      await Promise.race([Promise.allSettled(lanes), sleep(drainMs)]);
    },
  };
}

export interface LightUpdater {
  readonly token: string;
  readonly asins: readonly string[];
}

/** ASINs a light account's forced update names. */
const LIGHT_ASINS_PER_UPDATE = 5;

export function occasionalUpdates(
  apiUrl: string,
  accounts: readonly LightUpdater[],
  countries: readonly string[],
  perSecond: number,
): UpdateDriver {
  const samples: TimedSample[] = [];
  // Start of every request in flight: one still running at the end counts with what it has waited.
  const inFlight = new Map<Promise<void>, number>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const fire = (): void => {
    if (stopped) return;
    const account = accounts[Math.floor(Math.random() * accounts.length)]!;
    const country = countries[Math.floor(Math.random() * countries.length)]!;
    const p = timedUpdate(apiUrl, account.token, country, pick(account.asins, LIGHT_ASINS_PER_UPDATE)).then(
      (r) => void samples.push(r.sample),
    );
    inFlight.set(p, Date.now());
    void p.finally(() => inFlight.delete(p));
    // Exponential gaps: arrivals independent of the product's answers, as many clients' would be.
    timer = setTimeout(fire, (-Math.log(1 - Math.random()) / perSecond) * 1_000);
  };
  if (perSecond > 0 && accounts.length > 0) fire();
  return {
    samples,
    async stop(drainMs) {
      stopped = true;
      clearTimeout(timer);
      await Promise.race([Promise.allSettled([...inFlight.keys()]), sleep(drainMs)]);
      const now = Date.now();
      for (const startMs of inFlight.values()) samples.push({ startMs, atMs: now, latencyMs: now - startMs, status: -1 });
    },
  };
}
