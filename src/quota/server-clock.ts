/**
 * Where the clock the governor's scripts go by (Redis's TIME, which every process shares) stands
 * against this process's, learnt from the scripts' own answers: the script ran before its answer
 * came, so each answer that names the server's time says the server's clock is at least that far
 * ahead of this process's when the answer came. The greatest of the recent such bounds is the
 * tightest (the answer that waited least: NTP's clock filter, with one server). It errs early by
 * at most that answer's round trip and never late, so a call is never thought later than it went.
 */

/** This process's clock in ms, finer than Date.now(). */
export function localMs(): number {
  return performance.timeOrigin + performance.now();
}

interface Sample {
  /** The least the server's clock is ahead of this process's (ms): its time less when its answer came. */
  readonly offset: number;
  /** When it was taken, on this process's clock. */
  readonly at: number;
}

/** Samples kept: a few seconds of permits, so one slow answer never decides. */
const KEPT = 32;
/** A sample older than this no longer speaks for the offset: clocks drift apart. */
const FRESH_MS = 120_000;

export class ServerClock {
  readonly #samples: Sample[] = [];
  #next = 0;

  /** The server said `serverMs` in an answer that came at `afterMs` (localMs). */
  sample(serverMs: number, afterMs: number): void {
    if (!Number.isFinite(serverMs) || !Number.isFinite(afterMs)) return;
    const s = { offset: serverMs - afterMs, at: afterMs };
    if (this.#samples.length < KEPT) this.#samples.push(s);
    else this.#samples[this.#next] = s;
    this.#next = (this.#next + 1) % KEPT;
  }

  /** The earliest the server's clock can read at `local` (localMs), or undefined while no recent sample says. */
  at(local = localMs()): number | undefined {
    let offset = -Infinity;
    for (const s of this.#samples) if (local - s.at <= FRESH_MS && s.offset > offset) offset = s.offset;
    return offset === -Infinity ? undefined : local + offset;
  }
}
