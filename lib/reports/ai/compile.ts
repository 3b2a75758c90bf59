import { AI_CHANNEL, AI_COMPANIES, OTHER_COMPANY } from '../../ingest/ai-assistants'
import { dimension } from '../dimensions'
import type { Filter, Query } from '../query/model'
import { operatorSql } from '../query/compile/filters'
import { queryWindow } from '../query/compile/scope'
import { bucket } from '../query/compile/series'
import { type Fragment, bind, join, raw, sql } from '../../storage/clickhouse/sql'

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
const crawlPurpose = () =>
  sql`transform(bot_name, ${strings(CRAWLERS.map((c) => c.name))}, ${strings(CRAWLERS.map((c) => c.purpose))}, multiIf(bot_kind = 'ai-training', 'training', bot_kind = 'ai-search', 'search', 'user'))`

/**
 * The company whose assistant sent a visit, as the channel rule found it (ai-assistants.ts): the
 * referrer's assistant (stored as the source), else the assistant the `utm_source` names by value,
 * else by host or subdomain of one; `other` for a visit in the channel by its medium alone.
 */
function visitCompany(): Fragment {
  const lowered = raw('lower(trimBoth(utm_source))')
  const utm = sql`if(startsWith(${lowered}, 'www.'), substring(${lowered}, 5), ${lowered})`
  const names = strings(ASSISTANTS.map((a) => a.name))
  const values = strings(UTM_VALUES.map((u) => u.value))
  const hosts = strings(HOSTS.map((h) => h.host))
  const onHost = sql`h -> ${utm} = h OR endsWith(${utm}, concat('.', h))`
  return sql`multiIf(
    has(${names}, referrer_source), transform(referrer_source, ${names}, ${strings(ASSISTANTS.map((a) => a.company))}, ''),
    has(${values}, ${utm}), transform(${utm}, ${values}, ${strings(UTM_VALUES.map((u) => u.company))}, ''),
    arrayExists(${onHost}, ${hosts}), arrayElement(${strings(HOSTS.map((h) => h.company))}, arrayFirstIndex(${onHost}, ${hosts})),
    ${bind('String', OTHER_COMPANY.id)})`
}

const filterSql = (filters: readonly Filter[], table: 'events' | 'bots') =>
  filters.map((f) => {
    const column = dimension(f.dimension)?.standalone[table]
    // parsing admits only AI_FILTER_DIMENSIONS; this guards the allow-list itself
    if (!column) throw new Error(`${f.dimension} is not recorded on ${table}`)
    return operatorSql(raw(column), f.operator, f.value)
  })

/** The AI crawler hits the read counts: in the window, of an AI kind or a listed name, verified or not as asked, of the company asked. */
function crawlHits({ query, company, crawlers }: AiQuery): Fragment {
  const names = strings(CRAWLERS.map((c) => c.name))
  return join(
    [
      queryWindow(query).events,
      sql`(bot_name IN ${names} OR bot_kind IN ${AI_KINDS})`,
      ...(crawlers === 'verified' ? [raw('verified = 1')] : crawlers === 'claimed' ? [raw('verified = 0')] : []),
      ...(company ? [sql`${crawlCompany()} = ${bind('String', company)}`] : []),
      ...filterSql(query.filters, 'bots'),
    ],
    ' AND ',
  )
}

/** The pageviews of visits in the AI assistants channel in the window, of the company asked. */
function assistantPageviews({ query, company }: AiQuery): Fragment {
  return join(
    [
      queryWindow(query).events,
      sql`kind = 'pageview' AND channel = ${bind('String', AI_CHANNEL)}`,
      ...(company ? [sql`${visitCompany()} = ${bind('String', company)}`] : []),
      ...filterSql(query.filters, 'events'),
    ],
    ' AND ',
  )
}

/**
 * Each assistant visit once: its company, the first page it viewed in the window (where the
 * assistant's link led), and the bucket of that first view.
 */
function assistantVisits(ai: AiQuery): Fragment {
  return sql`
SELECT session_id, any(${visitCompany()}) AS company, argMin(pathname, timestamp) AS page, min(${bucket(ai.query.range)}) AS bucket
FROM events WHERE ${assistantPageviews(ai)}
GROUP BY session_id`
}

const PURPOSE_COUNTS = raw(
  "countIf(purpose = 'training') AS training, countIf(purpose = 'search') AS search, countIf(purpose = 'user') AS user",
)

/** Crawler hits per company and crawler name: all, verified, and the purpose. */
export function crawlsByCrawlerSql(ai: AiQuery): Fragment {
  return sql`
SELECT ${crawlCompany()} AS company, bot_name AS crawler, any(${crawlPurpose()}) AS purpose, count() AS crawls, countIf(verified = 1) AS verified_crawls
FROM bot_events WHERE ${crawlHits(ai)}
GROUP BY company, crawler
ORDER BY company, crawls DESC, crawler`
}

/** Assistant visits per company. */
export function visitsByCompanySql(ai: AiQuery): Fragment {
  return sql`SELECT company, count() AS visits FROM (${assistantVisits(ai)}) GROUP BY company`
}

/** Crawler hits (all and verified) and assistant visits per bucket start (epoch seconds); buckets without either have no row. */
export function aiSeriesSql(ai: AiQuery): Fragment {
  return sql`
SELECT toUnixTimestamp(bucket) AS bucket, sum(crawls) AS crawls, sum(verified_crawls) AS verified_crawls, sum(visits) AS visits
FROM (
  SELECT ${bucket(ai.query.range)} AS bucket, count() AS crawls, countIf(verified = 1) AS verified_crawls, toUInt64(0) AS visits
  FROM bot_events WHERE ${crawlHits(ai)} GROUP BY bucket
  UNION ALL
  SELECT bucket, toUInt64(0), toUInt64(0), count() FROM (${assistantVisits(ai)}) GROUP BY bucket
)
GROUP BY bucket ORDER BY bucket`
}

/** The page lists of the read: every page by crawls, the crawled pages no assistant sent a visit to, the pages assistants sent most visits to. */
export type PageList = 'crawled' | 'crawledNotVisited' | 'visited'

/** Per page: crawler hits (all, verified, by purpose) and the assistant visits that began there; one list, at most the query's limit. */
export function aiPagesSql(ai: AiQuery, list: PageList): Fragment {
  const having =
    list === 'crawledNotVisited'
      ? raw('HAVING crawls > 0 AND visits = 0')
      : list === 'visited'
        ? raw('HAVING visits > 0')
        : raw('HAVING crawls > 0')
  const order = list === 'visited' ? raw('visits DESC, crawls DESC, path') : raw('crawls DESC, visits DESC, path')
  return sql`
SELECT path, sum(crawls) AS crawls, sum(verified_crawls) AS verified_crawls, sum(training) AS training, sum(search) AS search, sum(user) AS user,
       sum(visits) AS visits
FROM (
  SELECT path, count() AS crawls, countIf(verified = 1) AS verified_crawls, ${PURPOSE_COUNTS}, toUInt64(0) AS visits
  FROM (SELECT pathname AS path, verified, ${crawlPurpose()} AS purpose FROM bot_events WHERE ${crawlHits(ai)})
  GROUP BY path
  UNION ALL
  SELECT page, toUInt64(0), toUInt64(0), toUInt64(0), toUInt64(0), toUInt64(0), count() FROM (${assistantVisits(ai)}) GROUP BY page
)
GROUP BY path
${having}
ORDER BY ${order}
LIMIT ${bind('UInt32', ai.query.limit)}`
}
