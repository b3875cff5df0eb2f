import type { Queue } from 'bullmq';
import type { Redis } from '../db/redis.js';
import { evalScript } from '../db/redis.js';
import type { Country } from '../core/identifiers.js';
import type { Metrics } from '../core/metrics.js';
import { QUOTA_CLASSES, type QuotaClass } from '../core/quota-classes.js';
import {
  UpstreamAuthError,
  UpstreamConfigError,
  UpstreamNotEligibleError,
  UpstreamRefusingError,
  type UpstreamCountryError,
} from '../core/errors.js';
import type { Logger } from '../logger.js';
import type { UpstreamPort } from '../upstream/port.js';
import { BREAKER_CLAIM_PROBE, BREAKER_CLOSE, BREAKER_MARK_PAUSED, BREAKER_OPEN } from './breaker-scripts.js';
import { breakerKey, untilProbeMs } from './breaker-keys.js';

/** Why a country's breaker opened: the upstream's persistent 429s, or an error no pace fixes. */
export type BreakerKind = 'throttled' | 'credential' | 'eligibility' | 'configuration';

export type BreakerStatus =
  | { readonly state: 'closed' }
  | { readonly state: 'open'; readonly kind: BreakerKind; readonly reason: string; readonly since: number; readonly probeAt: number };

type ProbeOp = 'getItems' | 'findByCode' | 'browseNode' | 'getBrowseNodes';

/** The call a probe repeats: the one that opened the breaker (one call, whatever it carries). */
export interface ProbeCall {
  readonly op: ProbeOp;
  readonly args: readonly unknown[];
}

export interface BreakerOptions {
  /** How long every call must have been answered 429 (at a pace well under Q) to open the breaker. */
  readonly windowMs: number;
  /** The wait before the first probe; each failed probe doubles it, up to probeMaxMs. */
  readonly probeBaseMs: number;
  readonly probeMaxMs: number;
}

/** A country's queue of a class, as the breaker pauses and resumes it (the job producer's). */
export type BreakerQueues = (country: Country, cls: QuotaClass) => Pick<Queue, 'pause' | 'resume' | 'isPaused'>;

export interface BreakerDeps {
  readonly redis: Redis;
  readonly prefix: string;
  readonly options: BreakerOptions;
  readonly queues: BreakerQueues;
  readonly logger: Logger;
  readonly metrics?: Metrics;
}

/** What an operator checks for each kind (one log line and the docs say the same). */
const WHAT_TO_CHECK: Readonly<Record<BreakerKind, string>> = {
  throttled:
    'every call was answered 429 at a pace well under the quota: fresh keys, an account without qualifying sales, or a marketplace the account may not use',
  credential: 'the credential was refused: check CREATORS_CREDENTIAL_ID_CC and CREATORS_CREDENTIAL_SECRET_CC',
  eligibility: "the account may not use this marketplace: check its eligibility (qualifying sales) in the marketplace's Associates Central",
  configuration: 'the configuration does not fit the upstream: the reason names the variable to fix',
};

export function kindOf(err: UpstreamCountryError): BreakerKind {
  if (err instanceof UpstreamAuthError) return 'credential';
  if (err instanceof UpstreamNotEligibleError) return 'eligibility';
  if (err instanceof UpstreamConfigError) return 'configuration';
  return 'eligibility';
}

/**
 * One breaker per country, shared by every process through Redis (src/quota/breaker-scripts.ts).
 * Open, the permit script grants no start in the country but to its probe: calls stop at once in
 * every process, its queues are paused (those the breaker paused, and only those, resume when it
 * closes: an operator's pause stays), and a probe repeats the call that opened it after a wait
 * that doubles with each failed probe. It closes when a probe goes through. Other countries'
 * keys, queues and pace are their own, so they go on as before.
 */
export class CountryBreakers {
  readonly #openListeners = new Set<(country: Country, probeAt: number) => void>();

  constructor(private readonly deps: BreakerDeps) {}

  get options(): BreakerOptions {
    return this.deps.options;
  }

  #key(country: Country): string {
    return breakerKey(this.deps.prefix, country);
  }

  /**
   * Opens the country's breaker (a no-op when open) and returns the error its callers get. The one
   * caller that opened it logs the change and pauses the queues.
   */
  async open(country: Country, kind: BreakerKind, reason: string, probe: ProbeCall): Promise<UpstreamRefusingError> {
    const now = Date.now();
    const raw = (await evalScript(
      this.deps.redis,
      BREAKER_OPEN,
      1,
      this.#key(country),
      String(now),
      kind,
      reason,
      String(this.deps.options.probeBaseMs),
      JSON.stringify(probe),
    )) as string[];
    const probeAt = Number(raw[1]);
    if (raw[0] === 'opened') {
      this.deps.metrics?.breakerOpen.set({ country }, 1);
      this.deps.logger.error(
        { country, breaker: 'open', kind, reason, nextProbeAt: new Date(probeAt).toISOString() },
        `upstream refusing ${country} (${kind}: ${reason}): its calls stop and its queues pause until a probe gets through; ${WHAT_TO_CHECK[kind].replaceAll('_CC', `_${country}`)}`,
      );
      await this.#pause(country);
    }
    for (const listener of this.#openListeners) listener(country, probeAt);
    return new UpstreamRefusingError(country, reason, untilProbeMs(probeAt, now));
  }

  /** Pauses the country's queues that run, and records those as the breaker's to resume. */
  async #pause(country: Country): Promise<void> {
    const paused: QuotaClass[] = [];
    await Promise.all(
      QUOTA_CLASSES.map(async (cls) => {
        const queue = this.deps.queues(country, cls);
        if (await queue.isPaused()) return;
        await queue.pause();
        paused.push(cls);
      }),
    );
    const kept = await evalScript(this.deps.redis, BREAKER_MARK_PAUSED, 1, this.#key(country), paused.join(','));
    // A probe closed it meanwhile: what was paused for it runs again.
    if (Number(kept) === 0) await this.#resume(country, paused);
  }

  async #resume(country: Country, classes: readonly QuotaClass[]): Promise<void> {
    await Promise.all(classes.map((cls) => this.deps.queues(country, cls).resume()));
  }

  async status(country: Country): Promise<BreakerStatus> {
    const [kind, reason, since, probeAt] = await this.deps.redis.hmget(this.#key(country), 'kind', 'reason', 'since', 'probe_at');
    if (kind === null) return { state: 'closed' };
    return { state: 'open', kind: kind as BreakerKind, reason: reason ?? '', since: Number(since), probeAt: Number(probeAt) };
  }

  /** The call to probe with, when a probe is due and this process claimed it; else when to look again. */
  async claimProbe(country: Country): Promise<{ probe: ProbeCall; nextAt: number } | { closed: true } | { probeAt: number }> {
    const raw = (await evalScript(
      this.deps.redis,
      BREAKER_CLAIM_PROBE,
      1,
      this.#key(country),
      String(Date.now()),
      String(this.deps.options.probeMaxMs),
    )) as string[];
    if (raw[0] === 'closed') return { closed: true };
    if (raw[0] === 'wait') return { probeAt: Number(raw[1]) };
    return { probe: JSON.parse(raw[1]!) as ProbeCall, nextAt: Number(raw[2]) };
  }

  /** A probe went through: the breaker closes and the queues it paused resume. */
  async close(country: Country): Promise<boolean> {
    const raw = (await evalScript(this.deps.redis, BREAKER_CLOSE, 1, this.#key(country))) as string[];
    if (raw[0] !== 'closed') return false;
    const classes = raw[1]!.split(',').filter((c): c is QuotaClass => (QUOTA_CLASSES as readonly string[]).includes(c));
    await this.#resume(country, classes);
    this.deps.metrics?.breakerOpen.set({ country }, 0);
    this.deps.logger.info(
      { country, breaker: 'closed', kind: raw[2], reason: raw[3], openForS: Math.round((Date.now() - Number(raw[4])) / 1_000) },
      `upstream serves ${country} again: a probe went through; its queues resume`,
    );
    return true;
  }

  /**
   * An operator resumed the country's queues by hand: from now on their pause, if any, is the
   * operator's, and the breaker's closing will not undo it.
   */
  async forgetPause(country: Country): Promise<void> {
    await this.deps.redis.hdel(this.#key(country), 'paused');
  }

  /** Called in this process when it opened a country's breaker, with the time of its first probe. */
  onOpen(listener: (country: Country, probeAt: number) => void): () => void {
    this.#openListeners.add(listener);
    return () => this.#openListeners.delete(listener);
  }
}

/** Runs a probe's call on a port: the same operation and arguments as the call that opened the breaker. */
export function runProbe(port: UpstreamPort, probe: ProbeCall): Promise<unknown> {
  const a = probe.args;
  switch (probe.op) {
    case 'getItems':
      return port.getItems(a[0] as string[]);
    case 'findByCode':
      return port.findByCode(a[0] as string, a[1] as number);
    case 'browseNode':
      return port.browseNode(a[0] as string, a[1] as number);
    case 'getBrowseNodes':
      return port.getBrowseNodes(a[0] as string[]);
  }
}
