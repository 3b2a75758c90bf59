import type { SaltsRepository } from './salts-repository'
import type { VisitsRepository } from './visits-repository'
import type { SiteDirectory } from '../sites/site-directory'
import { Coalescer } from './batching'
import { type Geo, type GeoLookup, cachedGeoLookup } from './geo'
import { DailySalts, type IdentifiedHit, hash64Many, identify } from './identity'
import type { IngestItem, IngestOutcome } from './item'
import type { RowHit } from './item'
import { type BotRow, botRowOf } from './rows'
import { type AcceptedHit, type BotHit, screen } from './screening'
import { type EventSink, type IngestBatch, countUsage } from './sink'
import { clickhouseTime } from '../storage/clickhouse/time'
import { eventRowsOf } from './sessionize'

const STORED: IngestOutcome = Object.freeze({ status: 'stored' })

/**
 * The one ingestion path of browser hits and imported raw hits, in stages: screening against the
 * site's settings, identity and place (what needs the client's address), and the sink, which makes
 * the visits and rows where it stores the batch (on the Node server, after the hit is journaled and
 * answered; see sink.ts).
 */
export class Ingestor {
  private readonly salts: DailySalts
  private readonly geo: (ip: string) => Promise<Geo | null>
  private readonly batches = new Coalescer((items: IngestItem[]) => this.ingest(items))

  constructor(
    private readonly deps: {
      /** Where imports look their hits' sites up; live hits come with theirs. */
      sites: SiteDirectory
      repositories: { salts: SaltsRepository; visits: VisitsRepository }
      sink: EventSink
      geo?: GeoLookup
      now: () => Date
      /** Coalesce concurrent live hits into batches (Node). Workers keep each request's I/O its own. */
      coalesce?: boolean
      /**
       * Leave the hits' visits and rows to the sink, which makes them where it stores the batch (the
       * Node server's journaled sink): a live hit's request ends once it is journaled. Without it
       * (imports, Workers) the rows are made here, with this ingestor's visits.
       */
      rowsInSink?: boolean
      /** Told of the outcomes of the hits taken in, once stored or dropped (metrics). */
      observe?: (outcomes: readonly IngestOutcome[]) => void
    },
  ) {
    this.salts = new DailySalts(deps.repositories.salts)
    this.geo = deps.geo ? cachedGeoLookup(deps.geo) : () => Promise.resolve(null)
  }

  get sites(): SiteDirectory {
    return this.deps.sites
  }

  /** The country of an address (ISO 3166-1 alpha-2), '' where it is not known: server-side bot hits are placed with it. */
  async countryOf(ip: string): Promise<string> {
    return (await this.geo(ip))?.country ?? ''
  }

  /** Ingests one live hit, coalesced with the hits of concurrent requests when the home allows. */
  submit(item: IngestItem): Promise<IngestOutcome> {
    if (this.deps.coalesce) return this.batches.submit(item)
    return this.ingest([item]).then(([outcome]) => outcome)
  }

  /** Stores bot rows of server-side collection; they count as usage of kind "bot", which is not billed. */
  async writeBots(orgId: string, rows: BotRow[]) {
    if (!rows.length) return
    const usage: IngestBatch['usage'] = new Map()
    const now = this.deps.now().toISOString()
    for (const row of rows) countUsage(usage, orgId, row.site_id, now, 'bot')
    await this.deps.sink.write({ events: [], hits: [], bots: rows, usage })
    this.deps.observe?.(rows.map(() => STORED))
  }

  async ingest(items: IngestItem[]): Promise<IngestOutcome[]> {
    const outcomes: IngestOutcome[] = new Array(items.length)
    const batch: IngestBatch = { events: [], hits: [], bots: [], usage: new Map() }
    const now = this.deps.now().getTime()

    // screening: nothing here waits; a bot the site keeps goes to its row, placed by its address
    const accepted: AcceptedHit[] = []
    const bots: BotHit[] = []
    items.forEach((item, index) => {
      const screened = screen(item, index, now)
      if ('status' in screened) outcomes[index] = screened
      else if ('bot' in screened) bots.push(screened)
      else accepted.push(screened)
    })
    const botGeos = bots.length ? await Promise.all(bots.map((b) => (b.item.geo !== undefined ? b.item.geo : this.geo(b.item.ip)))) : []
    bots.forEach((bot, i) => {
      const row = botRowOf(bot, botGeos[i])
      batch.bots.push(row)
      // imported history is not usage: usage is what was collected (docs/import.md)
      if (bot.item.source !== 'import') countUsage(batch.usage, bot.site.orgId, bot.site.id, row.timestamp, 'bot')
      outcomes[bot.index] = STORED
    })

    const identified = await identify(accepted, this.salts)
    await this.totalEngagedTime(identified)
    const geos = await this.geosOf(identified)

    identified.forEach((h, i) => {
      const { hit } = h.item
      const row: RowHit = {
        siteId: h.site.id,
        capturedQueryParams: h.site.tracking.capturedQueryParams,
        at: h.at,
        visitorId: h.visitorId,
        kind: h.kind,
        pathname: h.pathname,
        // an imported hit names its address: it is not kept (the visitor id and the place are)
        hit: hit.ip === undefined ? hit : { ...hit, ip: undefined },
        userAgent: h.item.userAgent,
        source: h.item.source,
        geo: geos[i],
        ...(h.item.enriched ? { enriched: h.item.enriched } : {}),
      }
      batch.hits.push(row)
      if (h.item.source !== 'import') countUsage(batch.usage, h.site.orgId, h.site.id, clickhouseTime(h.at), h.kind)
      outcomes[h.index] = STORED
    })
    if (!this.deps.rowsInSink && batch.hits.length) {
      batch.events = await eventRowsOf(this.deps.repositories.visits, batch.hits)
      batch.hits = []
    }
    if (batch.events.length || batch.hits.length || batch.bots.length) await this.deps.sink.write(batch)
    this.deps.observe?.(outcomes)
    return outcomes
  }

  /**
   * Plausible's engagement reports carry the time since the last one: each becomes its page view's
   * total so far; a pageview starts its page's total anew.
   */
  private async totalEngagedTime(hits: IdentifiedHit[]) {
    const pages = hits.filter((h) => h.item.plausible && (h.kind === 'pageview' || (h.kind === 'engagement' && h.item.hit.engagement)))
    if (!pages.length) return
    const urls = await hash64Many(pages.map((h) => h.item.hit.url))
    const totals = await this.deps.repositories.visits.runEngagedTime(
      pages.map((h, i) => ({ key: `${h.site.id}:${h.visitorId}:${urls[i]}`, ms: h.item.hit.engagement?.ms })),
    )
    pages.forEach((h, i) => {
      const report = h.item.hit.engagement
      if (h.kind === 'engagement' && report) h.item.hit.engagement = { ms: Math.min(totals[i], 86_400_000), scroll: report.scroll }
    })
  }

  /** The place of each hit, looked up once per address unless the edge sent it. */
  private async geosOf(hits: AcceptedHit[]): Promise<(Geo | null)[]> {
    const addresses = new Set<string>()
    for (const h of hits) if (h.item.geo === undefined) addresses.add(h.item.ip)
    const geos = new Map(await Promise.all([...addresses].map(async (ip) => [ip, await this.geo(ip)] as const)))
    return hits.map((h) => (h.item.geo !== undefined ? h.item.geo : (geos.get(h.item.ip) ?? null)))
  }
}
