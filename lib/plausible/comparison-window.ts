import { Temporal } from 'temporal-polyfill'
import { ApiError } from '../core/errors'
import { comparisonWindow as sameLengthWindow } from '../reports/query/compare'
import type { ResolvedRange } from '../reports/query/range'
import type { PlausibleComparison } from './query-schema'

/**
 * The window a comparison reads: the one just before (previous_period) or the same days a year
 * earlier (year_over_year), resolved as the v1 reads' `compare` resolves them at the query's `now`
 * (`day` against yesterday up to the same time of day); or, as Plausible allows, custom dates of
 * any length (site-local days, both included).
 */
export function comparisonWindow(range: ResolvedRange, comparison: PlausibleComparison, now: Date): ResolvedRange {
  if (comparison.mode === 'previous_period' || comparison.mode === 'year_over_year')
    return sameLengthWindow(range, comparison.mode, {}, now)
  const dates = comparison.date_range
  if (!dates) throw new ApiError(400, 'include.comparisons.date_range: required with mode custom')
  const [from, to] = dates.map((d, i) => {
    try {
      return Temporal.PlainDate.from(d.slice(0, 10), { overflow: 'reject' })
    } catch {
      throw new ApiError(400, `include.comparisons.date_range[${i}]: ${d} is not a calendar date`)
    }
  })
  if (Temporal.PlainDate.compare(from, to) > 0)
    throw new ApiError(400, 'include.comparisons.date_range: the first date is after the second')
  return {
    ...range,
    from: from.toZonedDateTime({ timeZone: range.timezone }),
    to: to.add({ days: 1 }).toZonedDateTime({ timeZone: range.timezone }),
  }
}
