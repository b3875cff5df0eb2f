/**
 * Wraps `run` so that it starts at most once every `ms`, and never while a run is still going:
 * every call in between gets the latest run's promise. Concurrent and back-to-back callers (scrapes
 * of /metrics) thus share one run, whatever their rate. `run` must not reject: a failure would be
 * handed to every caller until the next run.
 */
export function atMostEvery(ms: number, run: () => Promise<void>, now: () => number = Date.now): () => Promise<void> {
  let latest: Promise<void> | undefined;
  let startedAt = -Infinity;
  let running = false;
  return () => {
    if (latest && (running || now() - startedAt < ms)) return latest;
    startedAt = now();
    running = true;
    latest = run().finally(() => {
      running = false;
    });
    return latest;
  };
}
