/** The two functions of vega-statistics (which ships no types) that the simulator uses. */
declare module 'vega-statistics' {
  /** Φ((value − mean) / stdev); mean 0 and stdev 1 unless given. */
  export function cumulativeNormal(value: number, mean?: number, stdev?: number): number;
  /** The inverse of cumulativeNormal: NaN outside [0, 1]. */
  export function quantileNormal(p: number, mean?: number, stdev?: number): number;
}
