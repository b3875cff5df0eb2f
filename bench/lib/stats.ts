/** Small descriptive statistics for latency and wait samples. */

/** Nearest-rank percentile (p in 0..100) of unsorted samples; null when there are none. */
export function percentile(samples: readonly number[], p: number): number | null {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function mean(samples: readonly number[]): number | null {
  return samples.length === 0 ? null : samples.reduce((a, b) => a + b, 0) / samples.length;
}

export function max(samples: readonly number[]): number | null {
  return samples.length === 0 ? null : samples.reduce((a, b) => (b > a ? b : a), -Infinity);
}
