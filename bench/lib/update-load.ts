/**
 * The forced-update client of the update benchmark: once a second, `GET /api/world/update` for 10
 * random watched ASINs of a random country, without waiting for the previous call (a slow answer
 * must not thin out the load). It remembers which products it refreshed, because those jumped the
 * queue on purpose and must be left out of the priority-order check.
 */
export interface UpdateSample {
  readonly atMs: number;
  readonly latencyMs: number;
  /** HTTP status; 0 when the request failed outright, -1 when it had not finished at the end. */
  readonly status: number;
}

export interface UpdateLoad {
  /** `country:asin` of every product a forced update asked for. */
  readonly touched: Set<string>;
  /** Stops sending and waits (at most `drainMs`) for the calls in flight. */
  stop(drainMs: number): Promise<UpdateSample[]>;
}

export async function forcedUpdate(
  apiUrl: string,
  token: string,
  country: string,
  asins: readonly string[],
  timeoutMs: number,
): Promise<UpdateSample> {
  const started = performance.now();
  const url = `${apiUrl}/api/world/update?country=${country}&asin=${asins.join(',')}`;
  try {
    const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return { atMs: Date.now(), latencyMs: performance.now() - started, status: res.status };
  } catch {
    return { atMs: Date.now(), latencyMs: performance.now() - started, status: 0 };
  }
}

function pick(pool: readonly string[], n: number): string[] {
  const out = new Set<string>();
  while (out.size < Math.min(n, pool.length)) out.add(pool[Math.floor(Math.random() * pool.length)]!);
  return [...out];
}

export function startUpdateLoad(opts: {
  apiUrl: string;
  token: string;
  asins: readonly string[];
  countries: readonly string[];
  intervalMs?: number;
  timeoutMs?: number;
}): UpdateLoad {
  const touched = new Set<string>();
  const samples: UpdateSample[] = [];
  // Start time of every call in flight: one still running at the end counts with what it has waited.
  const inFlight = new Map<Promise<void>, number>();
  const fire = (): void => {
    const country = opts.countries[Math.floor(Math.random() * opts.countries.length)]!;
    const asins = pick(opts.asins, 10);
    for (const a of asins) touched.add(`${country}:${a}`);
    const p = forcedUpdate(opts.apiUrl, opts.token, country, asins, opts.timeoutMs ?? 60_000).then((s) => void samples.push(s));
    inFlight.set(p, performance.now());
    void p.finally(() => inFlight.delete(p));
  };
  fire();
  const timer = setInterval(fire, opts.intervalMs ?? 1_000);
  return {
    touched,
    async stop(drainMs) {
      clearInterval(timer);
      await Promise.race([Promise.allSettled([...inFlight.keys()]), new Promise((r) => setTimeout(r, drainMs))]);
      const now = performance.now();
      for (const started of inFlight.values()) samples.push({ atMs: Date.now(), latencyMs: now - started, status: -1 });
      return [...samples];
    },
  };
}
