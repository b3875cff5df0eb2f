/**
 * A product process's Prometheus text (its METRICS_PORT's /metrics), read by the benchmarks. The
 * wait is long: on a machine shared with other work a busy worker may take seconds to answer, and a
 * reading given up on ends the whole run.
 */
export async function metricsText(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(30_000) })).text();
}

/** MongoDB round trips each product process has sent so far (`shelfwatch_mongo_commands_total`), by its metrics URL. */
export async function mongoRoundTrips(urls: readonly string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const url of urls) {
    const m = /^shelfwatch_mongo_commands_total (\S+)$/m.exec(await metricsText(url));
    out[url] = m ? Number(m[1]) : 0;
  }
  return out;
}
