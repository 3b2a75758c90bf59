import { ApiError } from '../../core/errors'
import { AI_CHANNEL, AI_COMPANIES, OTHER_COMPANY } from '../../ingest/ai-assistants'
import { dimension } from '../dimensions'
import type { Filter, Query, RolledDays } from '../query/model'
import { rawDaySpans } from '../query/range'
import { currentRows } from '../query/compile/day-rollups'
import { operatorSql } from '../query/compile/filters'
import { daySpansScope, queryWindow } from '../query/compile/scope'
import { bucket, dayBucket } from '../query/compile/series'
import { type Fragment, bind, empty, join, raw, sql } from '../../storage/clickhouse/sql'

/** The dimensions both crawler hits and visits record: what the AI read filters by. */
export const AI_FILTER_DIMENSIONS = ['path', 'hostname', 'country'] as const

/** Which crawler hits count: all of them, those whose address was verified, or those that only claim the name. */
export const CRAWLER_SELECTIONS = ['all', 'verified', 'claimed'] as const
export type CrawlerSelection = (typeof CRAWLER_SELECTIONS)[number]

export interface AiQuery {
  query: Query
  /** One company's crawls and visits only (an id of AI_COMPANIES, or `other`). */
  company?: string
  crawlers: CrawlerSelection
}

const strings = (values: readonly string[]) => bind('Array(String)', values)
const CRAWLERS = AI_COMPANIES.flatMap((c) => c.crawlers.map((k) => ({ company: c.id, ...k })))
const ASSISTANTS = AI_COMPANIES.flatMap((c) => c.assistants.map((a) => ({ company: c.id, ...a })))
const UTM_VALUES = ASSISTANTS.flatMap((a) => a.utmSources.map((value) => ({ value, company: a.company })))
const HOSTS = ASSISTANTS.flatMap((a) => a.referrerHosts.map((host) => ({ host, company: a.company })))
/** The bot kinds of AI crawlers (bots.ts): a crawler of these kinds that no company lists counts under `other`. */
const AI_KINDS = raw("('ai-training', 'ai-search', 'ai-assistant')")

/** The company a crawler hit belongs to, by its stored name. */
const crawlCompany = () =>
  sql`transform(bot_name, ${strings(CRAWLERS.map((c) => c.name))}, ${strings(CRAWLERS.map((c) => c.company))}, ${bind('String', OTHER_COMPANY.id)})`
/** A crawler's purpose: the list's, else the one its kind says. */
export const crawlPurpose = () =>
  sql`transform(bot_name, ${strings(CRAWLERS.map((c) => c.name))}, ${strings(CRAWLERS.map((c) => c.purpose))}, multiIf(bot_kind = 'ai-training', 'training', bot_kind = 'ai-search', 'search', 'user'))`

/**
 * The company whose assistant sent a visit, as the channel rule found it (ai-assistants.ts), from
 * the visit's source and utm_source: the referrer's assistant (stored as the source), else the
 * assistant the `utm_source` names by value, else by host or subdomain of one; `other` for a visit
 * in the channel by its medium alone.
 */
function visitCompany(source: Fragment, utmSource: Fragment): Fragment {
  const lowered = sql`lower(trimBoth(${utmSource}))`
  const utm = sql`if(startsWith(${lowered}, 'www.'), substring(${lowered}, 5), ${lowered})`
  const names = strings(ASSISTANTS.map((a) => a.name))
  const values = strings(UTM_VALUES.map((u) => u.value))
  const hosts = strings(HOSTS.map((h) => h.host))
  const onHost = sql`h -> ${utm} = h OR endsWith(${utm}, concat('.', h))`
  return sql`multiIf(
    has(${names}, ${source}), transform(${source}, ${names}, ${strings(ASSISTANTS.map((a) => a.company))}, ''),
    has(${values}, ${utm}), transform(${utm}, ${values}, ${strings(UTM_VALUES.map((u) => u.company))}, ''),
    arrayExists(${onHost}, ${hosts}), arrayElement(${strings(HOSTS.map((h) => h.company))}, arrayFirstIndex(${onHost}, ${hosts})),
    ${bind('String', OTHER_COMPANY.id)})`
}

const filterSql = (filters: readonly Filter[], table: 'events' | 'bots') =>
  filters.map((f) => {
    const column = dimension(f.dimension)?.standalone[table]
    // parsing admits only AI_FILTER_DIMENSIONS; this guards the allow-list itself
    if (!column) throw new ApiError(400, `filters: ${f.dimension} is not recorded for both crawler hits and visits`)
    return operatorSql(raw(column), f.operator, f.value)
  })

/** The listed crawlers, name and purpose: they decide which bot hits are AI crawls and their purposes (what ai_rollups keeps). */
export const CRAWLER_LIST = CRAWLERS.map((c) => `${c.name}:${c.purpose}`)

/** The bot hits of AI crawlers: of an AI kind or a listed name. */
export const aiCrawls = () => sql`(bot_name IN ${strings(CRAWLERS.map((c) => c.name))} OR bot_kind IN ${AI_KINDS})`

/** The crawls a crawler selection keeps, by their `verified` column (of bot_events, or of ai_rollups). */
const selectedCrawlers = (crawlers: CrawlerSelection) =>
  crawlers === 'verified' ? [raw('verified = 1')] : crawlers === 'claimed' ? [raw('verified = 0')] : []

/** The AI crawler hits the read counts: in the scope, of an AI kind or a listed name, verified or not as asked. */
function crawlHits({ query, crawlers }: AiQuery, scope: Fragment): Fragment {
  return join([scope, aiCrawls(), ...selectedCrawlers(crawlers), ...filterSql(query.filters, 'bots')], ' AND ')
}

/** The pageviews of visits in the AI assistants channel in the scope (`name` first: events are ordered by it within a day). */
export function assistantPageviews(scope: Fragment, filters: readonly Filter[] = []): Fragment {
  return join(
    [scope, sql`name = 'pageview' AND kind = 'pageview' AND channel = ${bind('String', AI_CHANNEL)}`, ...filterSql(filters, 'events')],
    ' AND ',
  )
}

/**
 * The rows of ai_rollups (lib/reports/ai/rollup.ts): a day's marker (written last, it marks the
 * day built); crawls per page and crawler; visits; crawls per crawler alone; crawls per page alone.
 */
export const AI_GRAIN = { day: 0, crawls: 1, visits: 2, crawlers: 3, pages: 4 } as const

/**
 * One row per crawler hit and per assistant visit in the scope, the hits and visits the read
 * counts: the company, the crawler and its purpose (empty for a visit), the bucket and the page,
 * whether it is a crawl (`crawl` 1), a verified one, one of each purpose, or a visit. A visit
 * counts once, on the first page it viewed in the scope (where the assistant's link led), in the
 * bucket of that view; its company is found once per visit, from the source and utm_source every
 * event of the visit carries.
 */
function rawHitsAndVisits(ai: AiQuery, scope: Fragment): Fragment {
  const bucketOf = bucket(ai.query.range)
  return sql`
  SELECT ${crawlCompany()} AS company, bot_name AS crawler, ${crawlPurpose()} AS purpose, ${bucketOf} AS bucket, pathname AS path,
         toUInt8(1) AS crawl, verified, purpose = 'training' AS n_training, purpose = 'search' AS n_search, purpose = 'user' AS n_user,
         toUInt8(0) AS visit
  FROM bot_events WHERE ${crawlHits(ai, scope)}
  UNION ALL
  SELECT company, '', '', bucket, page, 0, 0, 0, 0, 0, 1
  FROM (
    SELECT ${visitCompany(raw('visit_source'), raw('visit_utm_source'))} AS company, page, bucket
    FROM (
      SELECT session_id, any(referrer_source) AS visit_source, any(utm_source) AS visit_utm_source,
             argMin(pathname, timestamp) AS page, min(${bucketOf}) AS bucket
      FROM events WHERE ${assistantPageviews(scope, ai.query.filters)}
      GROUP BY session_id
    )
  )`
}

/** The crawler names of a company (crawlCompany's inverse): ai_rollups is ordered by crawler, so its rows of them are read alone. */
const crawlersOf = (company: string) =>
  company === OTHER_COMPANY.id
    ? sql`bot_name NOT IN ${strings(CRAWLERS.map((c) => c.name))}`
    : sql`bot_name IN ${strings(CRAWLERS.filter((c) => c.company === company).map((c) => c.name))}`

/**
 * The rolled days' rows of ai_rollups as rawHitsAndVisits' rows, each counting its crawls or
 * visits: the company and purpose of a crawler derived from its stored name and kind, a visit's
 * company from its source and utm_source, as from bot_events and events. A read of one company
 * takes the crawls per page and crawler, which it narrows by company; any other read the crawls
 * per crawler (without a page: they count in the companies and the buckets only) and per page
 * (without a crawler or bucket: they count in the pages only), as many rows as pages or crawlers
 * a day, instead of one per page and crawler. A null key keeps a row out of that grouping
 * (aiVisibilitySql keeps the groups whose own key is not null).
 */
function rolledHitsAndVisits(ai: AiQuery, rolled: RolledDays): Fragment {
  const { query } = ai
  const is = (...grains: (keyof typeof AI_GRAIN)[]) => raw(`grain IN (${grains.map((g) => AI_GRAIN[g]).join(', ')})`)
  const crawls = ai.company ? sql`${is('crawls')} AND ${crawlersOf(ai.company)}` : is('crawlers', 'pages')
  // one pass over the table: a visit's row holds no crawler (bot_name '', no crawls)
  return sql`
  SELECT multiIf(${is('crawls', 'crawlers')}, ${crawlCompany()}, ${is('visits')}, ${visitCompany(raw('source'), raw('utm_source'))}, NULL),
         if(${is('pages')}, NULL, bot_name), multiIf(${is('crawls', 'crawlers')}, ${crawlPurpose()}, ${is('visits')}, '', NULL),
         if(${is('pages')}, NULL, ${dayBucket(query.range, raw('day'))}), if(${is('crawlers')}, NULL, path),
         crawls, verified * crawls, training, search, user, visits
  FROM ai_rollups FINAL
  WHERE ${currentRows(query.siteId, query.range.timezone, rolled)}
    AND (${is('visits')} OR (${join([crawls, ...selectedCrawlers(ai.crawlers)], ' AND ')}))`
}

/**
 * The hits and visits the read counts (rawHitsAndVisits' rows): of the window, or, over a window
 * of whole days some of which are rolled up, those days' rows of ai_rollups and the other days'
 * (today, a day changed since its build) from bot_events and events. A visit ends at the
 * site-local midnight, so its first page in the window is its first page on its day.
 */
function hitsAndVisits(ai: AiQuery, rolled?: RolledDays): Fragment {
  const { query } = ai
  const rows = rolled
    ? sql`${rawHitsAndVisits(ai, daySpansScope(query.siteId, rawDaySpans(query.range, rolled.days)).events)}
  UNION ALL ${rolledHitsAndVisits(ai, rolled)}`
    : rawHitsAndVisits(ai, queryWindow(query).events)
  return ai.company ? sql`SELECT * FROM (${rows}) WHERE company = ${bind('String', ai.company)}` : rows
}

/**
 * The whole read in one pass over the crawler hits and visits, as one row, grouped three ways at
 * once (GROUPING SETS; the keys of the other groupings are null in each grouping's rows), the
 * rolled days (whole days of a day, week or month series, without filters) from ai_rollups:
 * - `by_company`: per company and crawler (crawler '' holds the company's visits), [company,
 *   crawler, purpose, crawls, verified crawls, visits];
 * - `by_bucket`: per bucket, [bucket start (epoch seconds), crawls, verified crawls, visits];
 * - the page lists, each at most the query's limit, a page being [path, crawls, verified crawls,
 *   training, search and user crawls, visits]: `crawled`, pages with crawls, most crawls first;
 *   `crawled_not_visited`, those no assistant sent a visit to; `visited`, pages with visits, most
 *   visits first. Ties by the other count, then by path.
 */
export function aiVisibilitySql(ai: AiQuery, rolled?: RolledDays): Fragment {
  const n = bind('UInt32', ai.query.limit)
  return sql`
SELECT by_company, by_bucket,
       arraySlice(arraySort(r -> (-toInt64(r.2), -toInt64(r.7), r.1), arrayFilter(r -> r.2 > 0, pages)), 1, ${n}) AS crawled,
       arraySlice(arraySort(r -> (-toInt64(r.2), r.1), arrayFilter(r -> r.2 > 0 AND r.7 = 0, pages)), 1, ${n}) AS crawled_not_visited,
       arraySlice(arraySort(r -> (-toInt64(r.7), -toInt64(r.2), r.1), arrayFilter(r -> r.7 > 0, pages)), 1, ${n}) AS visited
FROM (
  SELECT groupArrayIf((company, crawler, crawler_purpose, crawls, verified_crawls, visits), company IS NOT NULL) AS by_company,
         groupArrayIf((toUnixTimestamp(bucket), crawls, verified_crawls, visits), bucket IS NOT NULL) AS by_bucket,
         groupArrayIf((assumeNotNull(path), crawls, verified_crawls, training, search, user, visits), path IS NOT NULL) AS pages
  FROM (
    SELECT company, crawler, bucket, path, any(purpose) AS crawler_purpose, sum(crawl) AS crawls, sum(verified) AS verified_crawls, sum(visit) AS visits,
           sum(n_training) AS training, sum(n_search) AS search, sum(n_user) AS user
    FROM (${hitsAndVisits(ai, rolled)})
    GROUP BY GROUPING SETS ((company, crawler), (bucket), (path))
    SETTINGS group_by_use_nulls = 1
  )
)${rolled ? raw('\nSETTINGS do_not_merge_across_partitions_select_final = 1') : empty}`
}
