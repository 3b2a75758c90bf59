import { AI_COMPANIES, CRAWLER_PURPOSES, type CrawlerPurpose, OTHER_COMPANY } from '../../ingest/ai-assistants'
import { ApiError } from '../../errors'
import type { Site } from '../../sites/sites'
import { execute } from '../../storage/clickhouse/execute'
import { collectorRead } from '../query/behaviour'
import { type ReportParams, collectorSource } from '../query/parse'
import { buckets, rangeView } from '../query/range'
import { type ReportDeps, prepare } from '../query/reports'
import {
  AI_FILTER_DIMENSIONS,
  type AiQuery,
  type CrawlerSelection,
  type PageList,
  aiPagesSql,
  aiSeriesSql,
  crawlsByCrawlerSql,
  visitsByCompanySql,
} from './compile'

export interface AiParams extends ReportParams {
  company?: string
  crawlers?: CrawlerSelection
}

type Row = Record<string, unknown>
const numberOf = (v: unknown) => Number(v ?? 0)
/** Crawler hits per assistant visit, two decimals; null when assistants sent no visit. */
export const crawlRatio = (crawls: number, visits: number) => (visits > 0 ? Math.round((crawls / visits) * 100) / 100 : null)

export const COMPANY_IDS = [...AI_COMPANIES.map((c) => c.id), OTHER_COMPANY.id]

type Purposes = Record<CrawlerPurpose, number>
const noPurposes = (): Purposes => ({ training: 0, search: 0, user: 0 })

function pageOf(r: Row) {
  const crawls = numberOf(r.crawls)
  const visits = numberOf(r.visits)
  return {
    path: String(r.path),
    crawls,
    verifiedCrawls: numberOf(r.verified_crawls),
    purposes: { training: numberOf(r.training), search: numberOf(r.search), user: numberOf(r.user) },
    visits,
    ratio: crawlRatio(crawls, visits),
  }
}

/** The read's query: the common parameters, filters on what crawler hits and visits both record, the company and crawler selection checked. */
async function aiQuery(deps: ReportDeps, site: Site, params: AiParams): Promise<AiQuery> {
  if (params.company !== undefined && !COMPANY_IDS.includes(params.company))
    throw new ApiError(400, `company: "${params.company}" is not a listed AI company (${COMPANY_IDS.join(', ')})`)
  const { query } = await prepare(deps, site, { ...params, source: 'standalone' })
  for (const f of query.filters)
    if (!(AI_FILTER_DIMENSIONS as readonly string[]).includes(f.dimension))
      throw new ApiError(
        400,
        `filters: ${f.dimension} is not recorded for both crawler hits and visits; the AI read filters by ${AI_FILTER_DIMENSIONS.join(', ')}`,
      )
  return { query, company: params.company, crawlers: params.crawlers ?? 'all' }
}

async function aiVisibilityRead(deps: ReportDeps, site: Site, params: AiParams) {
  const ai = await aiQuery(deps, site, params)
  const { clickhouse } = deps
  const lists: PageList[] = ['crawled', 'crawledNotVisited', 'visited']
  // one statement at a time: the embedded engine runs bound statements one after another anyway
  const crawlerRows = await execute<Row>(clickhouse, crawlsByCrawlerSql(ai))
  const visitRows = await execute<Row>(clickhouse, visitsByCompanySql(ai))
  const seriesRows = await execute<Row>(clickhouse, aiSeriesSql(ai))
  const pageRows: Row[][] = []
  for (const list of lists) pageRows.push(await execute<Row>(clickhouse, aiPagesSql(ai, list)))

  const visitsOf = new Map(visitRows.map((r) => [String(r.company), numberOf(r.visits)]))
  const ids = new Set([...crawlerRows.map((r) => String(r.company)), ...visitsOf.keys()])
  const companies = [...ids].map((id) => {
    const listed = AI_COMPANIES.find((c) => c.id === id)
    const crawlers = crawlerRows
      .filter((r) => String(r.company) === id)
      .map((r) => ({
        name: String(r.crawler),
        // the SQL answers one of CRAWLER_PURPOSES for every hit
        purpose: String(r.purpose) as CrawlerPurpose,
        crawls: numberOf(r.crawls),
        verifiedCrawls: numberOf(r.verified_crawls),
      }))
    const purposes = noPurposes()
    for (const c of crawlers) purposes[c.purpose] += c.crawls
    const crawls = crawlers.reduce((n, c) => n + c.crawls, 0)
    const visits = visitsOf.get(id) ?? 0
    return {
      id,
      name: listed?.name ?? OTHER_COMPANY.name,
      assistants: listed?.assistants.map((a) => a.name) ?? [],
      crawls,
      verifiedCrawls: crawlers.reduce((n, c) => n + c.verifiedCrawls, 0),
      purposes,
      crawlers,
      visits,
      ratio: crawlRatio(crawls, visits),
    }
  })
  companies.sort((a, b) => b.crawls - a.crawls || b.visits - a.visits || a.id.localeCompare(b.id))

  const purposes = noPurposes()
  for (const c of companies) for (const p of CRAWLER_PURPOSES) purposes[p] += c.purposes[p]
  const crawls = companies.reduce((n, c) => n + c.crawls, 0)
  const visits = companies.reduce((n, c) => n + c.visits, 0)

  const byBucket = new Map(seriesRows.map((r) => [numberOf(r.bucket), r]))
  const series = buckets(ai.query.range).map(({ epoch, label }) => {
    const r = byBucket.get(epoch)
    const [bucketCrawls, bucketVisits] = [numberOf(r?.crawls), numberOf(r?.visits)]
    return {
      timestamp: label,
      crawls: bucketCrawls,
      verifiedCrawls: numberOf(r?.verified_crawls),
      visits: bucketVisits,
      ratio: crawlRatio(bucketCrawls, bucketVisits),
    }
  })

  const [crawled, crawledNotVisited, mostVisited] = pageRows.map((rows) => rows.map(pageOf))
  return {
    available: true,
    range: rangeView(ai.query.range),
    totals: {
      crawls,
      verifiedCrawls: companies.reduce((n, c) => n + c.verifiedCrawls, 0),
      purposes,
      visits,
      ratio: crawlRatio(crawls, visits),
    },
    companies,
    series,
    pages: { crawled, crawledNotVisited, mostVisited },
  }
}

/**
 * GET /ai: per AI company, the hits of its crawlers (bot_events) by purpose, verified or only
 * claiming the name, the visits its assistants sent (the AI assistants channel), and the ratio of
 * the two, over the window, per page and per bucket. Crawler hits and visits are the collector's,
 * so a site without the standalone source answers `available: false`.
 */
export const aiVisibility = (deps: ReportDeps, site: Site, params: AiParams) =>
  collectorRead(site, params, async () =>
    collectorSource(params, site) === 'standalone'
      ? aiVisibilityRead(deps, site, params)
      : {
          available: false,
          companies: [],
          series: [],
          pages: { crawled: [], crawledNotVisited: [], mostVisited: [] },
        },
  )
