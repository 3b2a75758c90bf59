import type { Temporal } from 'temporal-polyfill'
import type { ClickHouse } from '../../storage/clickhouse/types'
import type { ResolvedRange } from '../query/range'
import { rolledDays } from '../query/run'
import { breakdownRows, localDay, rowsWithRollup } from '../query/compile/rows'
import { windowScope } from '../query/compile/scope'
import { unrolledScope } from '../query/compile/selection'
import type { Fragment } from '../../storage/clickhouse/sql'

/**
 * Per site-local day and path, the numbers of the path breakdown (columns day, value, visitors,
 * visits, pageviews, events) over whole days [from, to): the daily rollup's rows for the days it
 * holds current, events for the others, as unfiltered reports read them. A page's visits are thus
 * the same number the path breakdown shows.
 */
export async function pathDaysSql(
  clickhouse: ClickHouse,
  siteId: string,
  timezone: string,
  from: Temporal.ZonedDateTime,
  to: Temporal.ZonedDateTime,
): Promise<Fragment> {
  const range: ResolvedRange = { name: 'custom', timezone, from, to, interval: 'day' }
  const rolled = await rolledDays(clickhouse, { siteId, range })
  const day = localDay(timezone)
  if (!rolled.days.length && !rolled.partial) {
    const scope = windowScope(siteId, range)
    return breakdownRows('path', scope, scope.events, { day, engagement: false })
  }
  return rowsWithRollup('path', unrolledScope(siteId, range, rolled), timezone, rolled, { day, engagement: false })
}
