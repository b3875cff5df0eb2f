/** A product process's Prometheus text (its METRICS_PORT's /metrics), read by the benchmarks. */
export async function metricsText(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
}
