/**
 * Robust statistics for telling news from noise: the median and the median absolute deviation
 * (MAD) are not moved by the one unusual value they are asked to judge, as a mean and a standard
 * deviation would be.
 */

export function median(values: readonly number[]): number {
  return middle(sortedCopy(values))
}

/** The median and the median absolute deviation (MAD) from it, each sorted once. */
export function medianAndDeviation(values: readonly number[]): { median: number; deviation: number } {
  const sorted = sortedCopy(values)
  const m = middle(sorted)
  for (let i = 0; i < sorted.length; i++) sorted[i] = Math.abs(sorted[i] - m)
  return { median: m, deviation: middle(sortedCopy(sorted)) }
}

const middle = (sorted: ArrayLike<number>) => {
  if (!sorted.length) return 0
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * The values in ascending order, in a new array. The spike rule sorts a few values per bucket
 * (its weeks of baseline), hundreds of buckets a read: an insertion sort of so few is several
 * times quicker than Array.prototype.sort with a comparator; longer lists sort as numbers.
 */
function sortedCopy(values: ArrayLike<number>): Float64Array {
  const sorted = Float64Array.from(values)
  if (sorted.length > 16) return sorted.sort()
  for (let i = 1; i < sorted.length; i++) {
    const x = sorted[i]
    let j = i - 1
    for (; j >= 0 && sorted[j] > x; j--) sorted[j + 1] = sorted[j]
    sorted[j + 1] = x
  }
  return sorted
}

/** The MAD scaled to estimate a standard deviation of normal data (1.4826 × MAD). */
export const MAD_SCALE = 1.4826

/** A fraction rounded to four places, for answers a reader compares by eye and a test by value. */
export const round4 = (x: number) => Math.round(x * 10_000) / 10_000
