import { GOAL, PROPERTY_PREFIX } from '../../dimensions'
import type { Query, RolledDays } from '../model'
import { dimensionSql, goalCondition } from './filters'
import { partialRows, rolledRows } from './day-rollups'
import { breakdownSource } from './rows'
import { type Scope, siteIs } from './scope'
import { type Fragment, bind, join, raw, sql } from '../../../storage/clickhouse/sql'
import { BOUNCED, VISIT_COUNTS, visitFacts } from './visits'

/**
 * Several breakdowns in one statement, for a read that needs many at once (an export): each row
 * carries its `property`, and each property keeps its own order and limit (LIMIT ... BY). Every
 * builder here computes, per property, exactly what breakdownSql computes for that property
 * alone under the same plan; one statement costs the engine far less than one per property.
 * Values are read as text, so that properties of different column types share one column.
 */

/**
 * The property of the window's totals in the day rollups (one row, value ''), which
 * rolledVisitAttributesSql reads as it reads any visit attribute: the totals read's own rows.
 */
export const WINDOW_TOTALS = ''

const names = (properties: readonly string[]) => bind('Array(String)', properties)

/** The top rows of each property, as breakdownSql orders and limits one. */
const perProperty = (query: Query) => sql`
ORDER BY property ASC, visitors DESC, value ASC
LIMIT ${bind('UInt32', query.limit)} BY property`

/**
 * Visit attributes under the rollup plan, unfiltered, the days not rolled up read from the
 * sessions rollup (unrolledFromSessions, visitAttributeRows): their rolled days' rows plus those
 * days' visits, per property and value.
 */
export function rolledVisitAttributesSql(
  query: Query,
  properties: readonly string[],
  scope: Scope,
  rolled: RolledDays,
  stored: readonly string[] = properties,
): Fragment {
  const values = join(
    properties.map((p) => (p === WINDOW_TOTALS ? sql`''` : sql`toString(any(${dimensionSql(p)}))`)),
    ', ',
  )
  // bounces too, for the totals' row (WINDOW_TOTALS)
  return sql`
SELECT property, value, visitors, visits, pageviews, events, bounces, bounces / visits AS bounce_rate, duration_ms / 1000 / visits AS avg_duration
FROM (
  SELECT property, value, sum(visitors) AS visitors, sum(visits) AS visits, sum(pageviews) AS pageviews, sum(events) AS events, sum(bounces) AS bounces, sum(duration_ms) AS duration_ms
  FROM (
    SELECT property, value, uniqExact(visitor) AS visitors, count() AS visits, sum(pv) AS pageviews, sum(ce) AS events,
           countIf(${BOUNCED}) AS bounces, toUInt64(round(sum(duration) * 1000)) AS duration_ms
    FROM (
      SELECT session_id, [${values}] AS visit_values, any(visitor_id) AS visitor, ${VISIT_COUNTS},
             dateDiff('millisecond', min(session_start), max(end)) / 1000 AS duration
      FROM sessions WHERE ${siteIs(query.siteId)} AND ${scope.visitsBegan}
      GROUP BY session_id
    )
    ARRAY JOIN visit_values AS value, ${names(properties)} AS property
    GROUP BY property, value${
      rolled.days.length
        ? sql`
    UNION ALL
    ${storedRowsOf(query, properties, stored, rolled, raw('value, visitors, visits, pageviews, events, bounces, duration_ms'))}`
        : sql``
    }
  )
  GROUP BY property, value
)
WHERE visitors > 0${perProperty(query)}`
}

/**
 * The rolled days' rows of several properties, each stored under its own name (the daily rollup)
 * or under the key of its rows rolled up on demand (`stored`, plan.ts's unfilteredRollupKey), as
 * rows of the property: `property`, then `columns`.
 */
function storedRowsOf(
  query: Query,
  properties: readonly string[],
  stored: readonly string[],
  rolled: RolledDays,
  columns: Fragment,
): Fragment {
  if (stored.every((key, i) => key === properties[i]))
    return rolledRows(query.siteId, query.range.timezone, properties, rolled, sql`property, ${columns}`)
  return sql`SELECT transform(stored_as, ${names(stored)}, ${names(properties)}, '') AS property, ${columns}
    FROM (${rolledRows(query.siteId, query.range.timezone, stored, rolled, sql`property AS stored_as, ${columns}`)})`
}

/**
 * Event properties without visit engagement whose finished days are rolled up on demand (plan.ts,
 * rolledOnDemand: event names, links, clicks, forms), unfiltered, all over the same rolled days:
 * each property's rows as its read under the rollup plan gives them (rowsWithRollup over
 * breakdownRows without engagement), the days not rolled up read once for all of them (each event
 * counted under every property it carries), the rolled days from the rows stored under each
 * property's key (`stored`).
 */
export function rolledOnDemandEventsSql(
  query: Query,
  properties: readonly string[],
  stored: readonly string[],
  scope: Scope,
  rolled: RolledDays,
  selected: Fragment,
): Fragment {
  const sources = properties.map((p) => ({ p, source: breakdownSource(p, scope) }))
  const pairs = join(
    sources.map(({ p, source }) => sql`(${bind('String', p)}, toString(${source.value}), toUInt8(${source.presence ?? raw('1')}))`),
    ', ',
  )
  const presences = sources.map(({ source }) => source.presence)
  const narrowed = presences.every((p) => p !== null) ? sql` AND (${join(presences as Fragment[], ' OR ')})` : raw('')
  return sql`
SELECT property, value, visitors, visits, pageviews, events
FROM (
  SELECT property, value, sum(visitors) AS visitors, sum(visits) AS visits, sum(pageviews) AS pageviews, sum(events) AS events
  FROM (
    SELECT pair.1 AS property, pair.2 AS value, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits,
           countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events
    FROM ${raw(scope.table)} ARRAY JOIN arrayFilter(p -> p.3, [${pairs}]) AS pair
    WHERE ${selected}${narrowed}
    GROUP BY property, value${
      rolled.days.length
        ? sql`
    UNION ALL
    ${storedRowsOf(query, properties, stored, rolled, raw('value, visitors, visits, pageviews, events'))}`
        : sql``
    }
  )
  GROUP BY property, value
)
WHERE visitors > 0${perProperty(query)}`
}

/**
 * Visit attributes whose filters are all on visit attributes, under the sessions plan
 * (visitBreakdownFromSessions): visits from the sessions rollup, views from events.
 */
export function visitAttributesFromSessionsSql(
  query: Query,
  properties: readonly string[],
  scope: Scope,
  visitFilters: readonly Fragment[],
  selected: Fragment,
): Fragment {
  const values = join(
    properties.map((p) => sql`toString(any(${dimensionSql(p)}))`),
    ', ',
  )
  const pairs = join(
    properties.map((p) => sql`(${bind('String', p)}, toString(${dimensionSql(p)}))`),
    ', ',
  )
  return sql`
SELECT visits_by_value.property AS property, visits_by_value.attribute AS value, visitors, visits, pageviews, events, bounce_rate, avg_duration
FROM (
  SELECT property, attribute, uniqExact(visitor) AS visitors, count() AS visits, countIf(${BOUNCED}) / count() AS bounce_rate, avg(duration) AS avg_duration
  FROM (${visitFacts(scope, visitFilters, { value: sql`[${values}]`, inWindow: true })})
  ARRAY JOIN value AS attribute, ${names(properties)} AS property
  GROUP BY property, attribute
) AS visits_by_value
LEFT JOIN (
  SELECT pair.1 AS property, pair.2 AS value, countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events
  FROM ${raw(scope.table)} ARRAY JOIN [${pairs}] AS pair
  WHERE ${selected}
  GROUP BY property, value
) AS views ON views.property = visits_by_value.property AND views.value = visits_by_value.attribute${perProperty(query)}`
}

/**
 * Event properties without visit engagement (custom properties, event names, links, clicks,
 * forms) under the events plan (breakdownRows without engagement): each selected event counted
 * under every property it carries. With goals, unfiltered, the goal breakdown's rows as well
 * (goalBreakdownSql reads the same events): property GOAL, and with `windowTotals` the window's
 * visitors under WINDOW_TOTALS (every event; without it, the caller has them from elsewhere).
 *
 * The events are read in two parts, each narrowed to the events that can carry one of its pairs
 * (an event outside both carries none, so it adds no row): the custom properties' to the events
 * with properties (`length(props) > 0`, which the events' props index answers by granule, migration
 * 0023), the rest to the events that carry one of them (an event goal's name narrows by the sort
 * key). The window's totals need every event: with them, the second part reads all of them.
 */
export function eventPropertiesSql(
  query: Query,
  properties: readonly string[],
  scope: Scope,
  selected: Fragment,
  goals: Query['goals'] = [],
  windowTotals = true,
): Fragment {
  const pairOf = (p: string) => {
    const source = breakdownSource(p, scope)
    return {
      pair: sql`(${bind('String', p)}, toString(${source.value}), toUInt8(${source.presence ?? raw('1')}), '')`,
      presence: source.presence,
    }
  }
  const custom = properties.filter((p) => p.startsWith(PROPERTY_PREFIX)).map(pairOf)
  const rest = properties.filter((p) => !p.startsWith(PROPERTY_PREFIX)).map(pairOf)
  // the goal read's rows (goalBreakdownSql): a pair per goal an event converts, with the goal's
  // currency, and one for every event, whose visitors are the window's (WINDOW_TOTALS)
  for (const goal of goals)
    rest.push({
      pair: sql`(${bind('String', GOAL)}, ${bind('String', goal.name)}, toUInt8(${goalCondition(goal)}), ${bind('String', goal.currency ?? '')})`,
      presence: goalCondition(goal),
    })
  if (goals.length && windowTotals) rest.push({ pair: sql`(${bind('String', WINDOW_TOTALS)}, '', toUInt8(1), '')`, presence: null })
  const columns = raw(
    goals.length ? 'visitor_id, session_id, kind, revenue_amount, revenue_currency, pair' : 'visitor_id, session_id, kind, pair',
  )
  const part = (pairs: { pair: Fragment; presence: Fragment | null }[], narrowed: Fragment | null) => sql`
    SELECT ${columns} FROM ${raw(scope.table)} ARRAY JOIN arrayFilter(p -> p.3, [${join(
      pairs.map((p) => p.pair),
      ', ',
    )}]) AS pair
    WHERE ${selected}${narrowed ? sql` AND ${narrowed}` : raw('')}`
  const parts: Fragment[] = []
  if (custom.length) parts.push(part(custom, raw('length(props) > 0')))
  if (rest.length) {
    const presences = rest.map((p) => p.presence)
    parts.push(part(rest, presences.every((p) => p !== null) ? sql`(${join(presences as Fragment[], ' OR ')})` : null))
  }
  const events = join(parts, '\n    UNION ALL')
  if (!goals.length)
    return sql`
SELECT property, value, visitors, visits, pageviews, events
FROM (
  SELECT pair.1 AS property, pair.2 AS value, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits,
         countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events
  FROM (${events}
  )
  GROUP BY property, value
)
WHERE visitors > 0${perProperty(query)}`
  return sql`
SELECT property, value, visitors, visits, pageviews, events, conversions, revenue, currency
FROM (
  SELECT pair.1 AS property, pair.2 AS value, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits,
         countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events, count() AS conversions,
         sumIf(revenue_amount, revenue_currency = pair.4 AND pair.4 != '') AS revenue, any(pair.4) AS currency
  FROM (${events}
  )
  GROUP BY property, value
)
WHERE visitors > 0${perProperty(query)}`
}

/**
 * Pages, hostnames, entry and exit pages under the rollup plan, unfiltered (rowsWithRollup over
 * breakdownRows): the rolled days' rows, today's partial rollup where there is one, and the rest
 * of today from events, with the engagement of the visits holding each value.
 */
export function rolledEventPropertiesSql(
  query: Query,
  properties: readonly string[],
  scope: Scope,
  rolled: RolledDays,
  selected: Fragment,
): Fragment {
  const metrics = ['visitors', 'visits', 'pageviews', 'events', 'bounces', 'duration_ms']
  const columns = raw(`property, value, ${metrics.join(', ')}`)
  const partial = scope.partial
  const events = eventRowsWithEngagement(properties, scope, selected, !!partial)
  const unrolled = partial
    ? sql`SELECT property, value, ${raw(metrics.map((m) => (m === 'visitors' ? 'uniqExactMerge(visitors) AS visitors' : `sum(${m}) AS ${m}`)).join(', '))}
  FROM (
    ${events}
    UNION ALL
    ${partialRows(query.siteId, query.range.timezone, properties, partial, columns)}
  )
  GROUP BY property, value`
    : events
  return sql`
SELECT property, value, visitors, visits, pageviews, events, bounces / visits AS bounce_rate, duration_ms / 1000 / visits AS avg_duration
FROM (
  SELECT property, value, ${raw(metrics.map((m) => `sum(${m}) AS ${m}`).join(', '))}
  FROM (
    ${unrolled}${
      rolled.days.length
        ? sql`
    UNION ALL
    ${rolledRows(query.siteId, query.range.timezone, properties, rolled, columns)}`
        : sql``
    }
  )
  GROUP BY property, value
)
WHERE visitors > 0${perProperty(query)}`
}

/**
 * breakdownRows of several event properties (and entry and exit pages, read from the sessions
 * rollup) at once: per property and value, the counts of the selected events, and the bounces and
 * duration of the visits holding the value.
 */
function eventRowsWithEngagement(properties: readonly string[], scope: Scope, selected: Fragment, visitorStates: boolean): Fragment {
  const pages = properties.filter((p) => p === 'entry_page' || p === 'exit_page')
  // FINAL merges a visit's rows in sort order, as breakdownSource reads them; a LEFT JOIN keeps the events of the other properties
  const from = pages.length
    ? sql`${raw(scope.table)} LEFT JOIN (SELECT session_id, finalizeAggregation(entry_page) AS visit_entry_page, finalizeAggregation(exit_page) AS visit_exit_page FROM sessions FINAL WHERE ${siteIs(scope.siteId)} AND ${scope.visitsBegan}) AS visit USING session_id`
    : raw(scope.table)
  const pairs = join(
    properties.map((p) => {
      if (p === 'entry_page' || p === 'exit_page') {
        const page = raw(`visit.visit_${p}`)
        return sql`(${bind('String', p)}, toString(${page}), toUInt8(${page} != ''))`
      }
      const source = breakdownSource(p, scope)
      return sql`(${bind('String', p)}, toString(${source.value}), toUInt8(${source.presence ?? raw('1')}))`
    }),
    ', ',
  )
  const rowPairs = sql`arrayFilter(p -> p.3, [${pairs}])`
  // a visit's pairs gathered by their hash, distinct of the visit's array: cheaper than a set of (property, value) strings a visit
  return sql`
SELECT counts.property AS property, counts.value AS value, visitors, visits, pageviews, events, bounces, duration_ms
FROM (
  SELECT row_pair.1 AS property, row_pair.2 AS value, ${raw(visitorStates ? 'uniqExactState' : 'uniqExact')}(visitor_id) AS visitors, uniqExact(session_id) AS visits,
         countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events, cityHash64(property, value) AS pair_key
  FROM ${from} ARRAY JOIN ${rowPairs} AS row_pair
  WHERE ${selected}
  GROUP BY property, value
) AS counts
LEFT JOIN (
  SELECT pair_key, countIf(${BOUNCED}) AS bounces, toUInt64(round(sum(duration) * 1000)) AS duration_ms
  FROM (${visitFacts(scope, [])}) AS facts
  INNER JOIN (
    SELECT session_id, arrayDistinct(groupArray(cityHash64(row_pair.1, row_pair.2))) AS pair_keys
    FROM ${from} ARRAY JOIN ${rowPairs} AS row_pair
    WHERE ${selected}
    GROUP BY session_id
  ) AS selected USING session_id
  ARRAY JOIN pair_keys AS pair_key
  GROUP BY pair_key
) AS engagement ON engagement.pair_key = counts.pair_key`
}
