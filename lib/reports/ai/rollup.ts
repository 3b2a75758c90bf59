import type { RolledDays } from '../query/model'
import { type DaySpan, type ResolvedRange, chTime } from '../query/range'
import { ROLLUP_VERSION, daySignatures, markedDayLookups, signatureOf } from '../query/compile/day-rollups'
import { localDay } from '../query/compile/rows'
import { daySpansScope, siteIs } from '../query/compile/scope'
import { buildStaleDays } from '../rollup/outdated'
import { BACKGROUND_SETTINGS } from '../../storage/clickhouse/execute'
import { type Fragment, bind, raw, sql } from '../../storage/clickhouse/sql'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { AI_GRAIN, CRAWLER_LIST, aiCrawls, assistantPageviews, crawlPurpose } from './compile'

/**
 * The AI visibility read's rollup (migration 0027): per finished site-local day, the AI crawler
 * hits per page and crawler (name, kind and verification), per crawler alone and per page alone,
 * and the assistants' visits per first page, source and utm_source. A crawler's company and a
 * visit's are derived at read time from what they come from, as from bot_events and events, so an
 * edit of the assistants needs no rebuild; the listed crawlers' names and purposes decide which
 * bot hits are kept and the purpose counts stored, so they are part of the day's signature.
 */

type Window = Pick<ResolvedRange, 'from' | 'to' | 'timezone'>

/**
 * Each day's signature for ai_rollups: its events' (daySignatures) and its bot hits' (bot_quarters)
 * added up, the hits' sum moved by a hash of the listed crawlers' names and purposes. A late hit
 * of either kind, or an edit of the crawlers, changes the signature of the days it touches (a day
 * without bot hits keeps no crawls), which then read raw until the next refresh rebuilds them.
 */
export const aiDaySignatures = (siteId: string, window: Window) => sql`
SELECT day, sum(n) AS n, sum(s) AS s FROM (
  ${daySignatures(siteId, window)}
  UNION ALL
  SELECT toDate(quarter, ${bind('String', window.timezone)}) AS day, sum(hits) AS n, sum(time_sum) + cityHash64(${bind('Array(String)', CRAWLER_LIST)}) AS s
  FROM bot_quarters
  WHERE ${siteIs(siteId)} AND quarter >= ${bind('DateTime64(3)', chTime(window.from))} AND quarter < ${bind('DateTime64(3)', chTime(window.to))}
  GROUP BY day
)
GROUP BY day`

/** The lookups of a window's days whose AI rollup is current (plan.ts's rolledDaysOf reads them), and of those with none at their current signature (rows: d, n, s). */
export const { rolledDaysSql: aiRolledDaysSql, staleDaysSql: aiStaleDaysSql } = markedDayLookups(
  'ai_rollups',
  raw(`grain = ${AI_GRAIN.day}`),
  aiDaySignatures,
)

/**
 * The AI rollup of whole site-local days, stamped with each day's signature: the AI crawler hits
 * per day, page, crawler name, kind and verification, per day, crawler and verification, and per
 * day, page and verification, each with its crawls of each purpose; the assistants' visits per
 * day, first page viewed, source and utm_source (a visit ends at the site-local midnight: its
 * first page on its day is its first page in any window of whole days); then each day's marker row.
 */
export function aiRollupInsertSql(siteId: string, timezone: string, spans: DaySpan[], days: RolledDays): Fragment[] {
  const scope = daySpansScope(siteId, spans).events
  const dayList = bind('Array(Date)', days.days)
  const stamp = sql`${bind('UUID', siteId)}, ${bind('String', timezone)}, ${bind('UInt16', ROLLUP_VERSION)}`
  const columns = raw(
    'INSERT INTO ai_rollups (site_id, timezone, version, grain, day, day_events, day_sum, path, bot_name, bot_kind, verified, source, utm_source, crawls, training, search, user, visits)',
  )
  const background = raw(`SETTINGS ${BACKGROUND_SETTINGS}`)
  const grain = (g: keyof typeof AI_GRAIN) => raw(String(AI_GRAIN[g]))
  return [
    sql`
${columns}
SELECT ${stamp}, grain, day, ${signatureOf(days)}, if(grain = ${grain('crawlers')}, '', pathname) AS page,
       if(grain = ${grain('pages')}, '', bot_name) AS crawler, if(grain = ${grain('pages')}, '', bot_kind) AS kind, verified, '', '',
       sum(hits), sumIf(hits, purpose = 'training'), sumIf(hits, purpose = 'search'), sumIf(hits, purpose = 'user'), 0
FROM (
  SELECT ${localDay(timezone)} AS day, pathname, bot_name, bot_kind, ${crawlPurpose()} AS purpose, verified, count() AS hits
  FROM bot_events WHERE ${scope} AND ${aiCrawls()}
  GROUP BY day, pathname, bot_name, bot_kind, verified
)
ARRAY JOIN [${grain('crawls')}, ${grain('crawlers')}, ${grain('pages')}] AS grain
WHERE has(${dayList}, day)
GROUP BY grain, day, page, crawler, kind, verified
${background}`,
    sql`
${columns}
SELECT ${stamp}, ${grain('visits')}, day, ${signatureOf(days)}, page, '', '', 0, visit_source, visit_utm_source, 0, 0, 0, 0, count()
FROM (
  SELECT toDate(min(timestamp), ${bind('String', timezone)}) AS day, argMin(pathname, timestamp) AS page,
         any(referrer_source) AS visit_source, any(utm_source) AS visit_utm_source
  FROM events WHERE ${assistantPageviews(scope)}
  GROUP BY session_id
)
WHERE has(${dayList}, day)
GROUP BY day, page, visit_source, visit_utm_source
${background}`,
    sql`
${columns}
SELECT ${stamp}, ${grain('day')}, day, ${signatureOf(days)}, '', '', '', 0, '', '', 0, 0, 0, 0, 0
FROM (SELECT arrayJoin(${dayList}) AS day)
${background}`,
  ]
}

/**
 * Builds the AI rollup of every finished day of the window that has none at its current
 * signature, then drops the rows of earlier builds of those days. Returns the number of days built.
 */
export const refreshAiRollups = (clickhouse: ClickHouse, siteId: string, window: Window) =>
  buildStaleDays(clickhouse, 'ai_rollups', siteId, window.timezone, aiStaleDaysSql(siteId, window), (spans, days) =>
    aiRollupInsertSql(siteId, window.timezone, spans, days),
  )
