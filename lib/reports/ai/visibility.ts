import { AI_COMPANIES, CRAWLER_PURPOSES, type CrawlerPurpose, OTHER_COMPANY } from '../../ingest/ai-assistants'
import { ApiError } from '../../core/errors'
import type { Site } from '../../sites/sites'
import { execute } from '../../storage/clickhouse/execute'
import { collectorRead } from '../query/behaviour'
import { type ReportParams, collectorSource } from '../query/parse'
import { type SignatureRow, rolledDaysOf } from '../query/plan'
import { buckets, rangeView, wholeDays } from '../query/range'
import { type ReportDeps, prepare } from '../query/reports'
import { AI_FILTER_DIMENSIONS, type AiQuery, type CrawlerSelection, aiVisibilitySql } from './compile'
import { aiRolledDaysSql } from './rollup'

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

/** A page of a list: [path, crawls, verified crawls, training, search and user crawls, visits] (aiVisibilitySql). */
function pageOf([path, crawls, verified, training, search, user, visits]: unknown[]) {
  return {
    path: String(path),
    crawls: numberOf(crawls),
    verifiedCrawls: numberOf(verified),
    purposes: { training: numberOf(training), search: numberOf(search), user: numberOf(user) },
    visits: numberOf(visits),
    ratio: crawlRatio(numberOf(crawls), numberOf(visits)),
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

/** The series intervals whose buckets are made of whole days: the only ones a read of rolled days can answer. */
const DAY_INTERVALS: readonly string[] = ['day', 'week', 'month']

async function aiVisibilityRead(deps: ReportDeps, site: Site, params: AiParams) {
  const ai = await aiQuery(deps, site, params)
  // an unfiltered read over whole days in day, week or month buckets takes the days whose AI rollup is current from it
  const { query } = ai
  const rolled =
    query.filters.length || !wholeDays(query.range) || !DAY_INTERVALS.includes(query.range.interval)
      ? undefined
      : rolledDaysOf(query, await execute<SignatureRow>(deps.clickhouse, aiRolledDaysSql(query.siteId, query.range)))
  const [lists] = await execute<Row>(deps.clickhouse, aiVisibilitySql(ai, rolled?.days.length ? rolled : undefined))

  // per company and crawler (crawler '' carries the company's visits): [company, crawler, purpose, crawls, verified crawls, visits]
  const byCompany = (lists?.by_company ?? []) as unknown[][]
  const ids = [...new Set(byCompany.map(([company]) => String(company)))]
  const companies = ids.map((id) => {
    const listed = AI_COMPANIES.find((c) => c.id === id)
    const rows = byCompany.filter(([company]) => String(company) === id)
    const crawlers = rows
      .filter(([, crawler]) => String(crawler) !== '')
      .map(([, crawler, purpose, crawls, verified]) => ({
        name: String(crawler),
        // the SQL answers one of CRAWLER_PURPOSES for every hit
        purpose: String(purpose) as CrawlerPurpose,
        crawls: numberOf(crawls),
        verifiedCrawls: numberOf(verified),
      }))
      .sort((a, b) => b.crawls - a.crawls || (a.name < b.name ? -1 : 1))
    const purposes = noPurposes()
    for (const c of crawlers) purposes[c.purpose] += c.crawls
    const crawls = crawlers.reduce((n, c) => n + c.crawls, 0)
    const visits = rows.reduce((n, r) => n + numberOf(r[5]), 0)
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
  companies.sort((a, b) => b.crawls - a.crawls || b.visits - a.visits || (a.id < b.id ? -1 : 1))

  const purposes = noPurposes()
  for (const c of companies) for (const p of CRAWLER_PURPOSES) purposes[p] += c.purposes[p]
  const crawls = companies.reduce((n, c) => n + c.crawls, 0)
  const visits = companies.reduce((n, c) => n + c.visits, 0)

  // per bucket: [bucket start, crawls, verified crawls, visits]
  const byBucket = new Map(((lists?.by_bucket ?? []) as unknown[][]).map((r) => [numberOf(r[0]), r]))
  const series = buckets(ai.query.range).map(({ epoch, label }) => {
    const [, crawls, verified, visits] = byBucket.get(epoch) ?? []
    const [bucketCrawls, bucketVisits] = [numberOf(crawls), numberOf(visits)]
    return {
      timestamp: label,
      crawls: bucketCrawls,
      verifiedCrawls: numberOf(verified),
      visits: bucketVisits,
      ratio: crawlRatio(bucketCrawls, bucketVisits),
    }
  })

  const pageList = (rows: unknown) => ((rows ?? []) as unknown[][]).map(pageOf)
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
    pages: {
      crawled: pageList(lists?.crawled),
      crawledNotVisited: pageList(lists?.crawled_not_visited),
      mostVisited: pageList(lists?.visited),
    },
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
