import { describe, expect, it } from 'vitest'
import { median, medianAndDeviation } from '../../lib/insights/why/robust'

/**
 * The spike rule's statistics (lib/reports/why/robust.ts), worked by hand: the median of an odd
 * count is the middle value, of an even count the mean of the middle two, and the median absolute
 * deviation is the median of each value's distance from the median. Short lists (a spike
 * baseline's weeks) and long ones take different sorts; both are checked, unsorted and with repeats.
 */
describe('median and median absolute deviation', () => {
  it('of an odd count', () => {
    // sorted 1 2 3 7 9: median 3; distances 2 1 0 4 6 → sorted 0 1 2 4 6: 2
    expect(medianAndDeviation([7, 1, 3, 9, 2])).toEqual({ median: 3, deviation: 2 })
    expect(median([7, 1, 3, 9, 2])).toBe(3)
  })

  it('of an even count, with repeats', () => {
    // sorted 0 4 4 10: median 4; distances 4 0 0 6 → sorted 0 0 4 6: 2
    expect(medianAndDeviation([4, 10, 0, 4])).toEqual({ median: 4, deviation: 2 })
    // sorted 1 2 3 4 5 6 7 8: median 4.5; distances 3.5 2.5 1.5 0.5 0.5 1.5 2.5 3.5: 2
    expect(medianAndDeviation([8, 3, 5, 1, 7, 2, 6, 4])).toEqual({ median: 4.5, deviation: 2 })
  })

  it('of nothing and of one value', () => {
    expect(medianAndDeviation([])).toEqual({ median: 0, deviation: 0 })
    expect(medianAndDeviation([5])).toEqual({ median: 5, deviation: 0 })
  })

  it('of a long list', () => {
    // 21 down to 1: median 11; distances 0, and 1 to 10 twice each: sorted, the 11th is 5
    const values = Array.from({ length: 21 }, (_, i) => 21 - i)
    expect(medianAndDeviation(values)).toEqual({ median: 11, deviation: 5 })
    // 2, 4, ..., 40 reversed: median (20 + 22) / 2 = 21
    expect(median(Array.from({ length: 20 }, (_, i) => 40 - 2 * i))).toBe(21)
  })

  it('leaves its input as it was', () => {
    const values = [3, 1, 2]
    medianAndDeviation(values)
    median(values)
    expect(values).toEqual([3, 1, 2])
  })
})
