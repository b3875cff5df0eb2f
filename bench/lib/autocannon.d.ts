/** The part of autocannon 9 (no bundled types, no @types package installed) that bench/api.ts uses. */
declare module 'autocannon' {
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    headers?: Record<string, string>;
    timeout?: number;
  }
  interface Histogram {
    average: number;
    mean: number;
    max: number;
    min: number;
    total: number;
    p50: number;
    p90: number;
    p99: number;
  }
  interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    statusCodeStats: Record<string, { count: number }>;
    latency: Histogram & { totalCount: number };
    requests: Histogram & { sent: number };
  }
  function autocannon(opts: Options): Promise<Result>;
  export default autocannon;
}
