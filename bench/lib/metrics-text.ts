/**
 * A product process's Prometheus text (its METRICS_PORT's /metrics), read by the benchmarks. The
 * wait is long: on a machine shared with other work a busy worker may take seconds to answer, and a
 * reading given up on ends the whole run.
 */
export async function metricsText(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(30_000) })).text();
}
