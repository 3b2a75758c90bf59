/**
 * Robust statistics for telling news from noise: the median and the median absolute deviation
 * (MAD) are not moved by the one unusual value they are asked to judge, as a mean and a standard
 * deviation would be.
 */

export function median(values: readonly number[]): number {
  if (!values.length) return 0
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** The median absolute deviation from the median. */
export function medianAbsoluteDeviation(values: readonly number[]): number {
  const m = median(values)
  return median(values.map((v) => Math.abs(v - m)))
}

/** The MAD scaled to estimate a standard deviation of normal data (1.4826 × MAD). */
export const MAD_SCALE = 1.4826

/** A fraction rounded to four places, for answers a reader compares by eye and a test by value. */
export const round4 = (x: number) => Math.round(x * 10_000) / 10_000
