import type { Temporal } from 'temporal-polyfill'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { TOTALS } from '../../reports/query/model'
import type { ResolvedRange } from '../../reports/query/range'
import { rolledDays } from '../../reports/query/run'
import { breakdownRows, localDay, rowsWithRollup } from '../../reports/query/compile/rows'
import { windowScope } from '../../reports/query/compile/scope'
import { unrolledScope } from '../../reports/query/compile/selection'
import type { Fragment } from '../../storage/clickhouse/sql'

/**
 * Per site-local day over whole days [from, to), the numbers unfiltered reports show (columns day,
 * value, visitors, visits, pageviews, events): `paths` per path, as the path breakdown counts a
 * page, and `site` the site's own (value ''), as the totals count it. Both read the daily rollup's
 * rows for the days it holds current and events for the others, after one lookup of the rolled
 * days: a year of the site's visits per day is a year of rolled rows, not a count of every visit
 * of the year.
 */
export async function dayRowsSql(
  clickhouse: ClickHouse,
  siteId: string,
  timezone: string,
  from: Temporal.ZonedDateTime,
  to: Temporal.ZonedDateTime,
): Promise<{ paths: Fragment; site: Fragment }> {
  const range: ResolvedRange = { name: 'custom', timezone, from, to, interval: 'day' }
  const rolled = await rolledDays(clickhouse, { siteId, range })
  const day = localDay(timezone)
  const options = { day, engagement: false }
  const unrolled = !rolled.days.length && !rolled.partial
  const scope = unrolled ? windowScope(siteId, range) : unrolledScope(siteId, range, rolled)
  const rows = (property: string) =>
    unrolled ? breakdownRows(property, scope, scope.events, options) : rowsWithRollup(property, scope, timezone, rolled, options)
  return { paths: rows('path'), site: rows(TOTALS) }
}
