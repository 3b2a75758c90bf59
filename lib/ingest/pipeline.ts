import ipaddr from 'ipaddr.js'
import { hash64Many, random64, randomString } from '../keys'
import { clickhouseTime } from '../olap/time'
import type { SiteDirectory } from '../site-directory'
import type { Site } from '../sites'
import type { Store } from '../store'
import { type BotInfo, classifyBot } from './bots'
import { channelFor, classifyReferrer, linkKind, parseUserAgent, pathMatches, screenClass, utmFrom } from './enrich'
import type { Geo, GeoLookup } from './geo'
import { type EventKind, type Hit, kindOfName } from './hit'
import type { EventSink, IngestBatch, Row } from './sink'

export const VISIT_GAP_MS = 30 * 60 * 1000

export interface IngestItem {
  hit: Hit
  /** The site of `hit.site`, looked up by whoever received the hit; null when there is none. */
  site: Site | null
  ip: string
  userAgent: string
  /** When the hit arrived; the import uses the hit's own timestamp instead. */
  receivedAt: Date
  /** Geo known from the edge (request.cf); otherwise looked up from the IP. */
  geo?: Geo | null
  /** Where it came from: the browser tracker, the raw-hit import. */
  source: 'browser' | 'import'
}

export type IngestOutcome = { status: 'stored' } | { status: 'dropped'; reason: string } | { status: 'rejected'; error: string }

/** Visit-scoped attributes: those of the visit's first hit, stamped on every event of the visit. */
type VisitAttrs = Pick<
  Row,
  'referrer' | 'referrer_source' | 'referrer_medium' | 'channel' | 'utm_source' | 'utm_medium' | 'utm_campaign' | 'utm_term' | 'utm_content' |
  'country_code' | 'region' | 'city' | 'latitude' | 'longitude' | 'browser' | 'browser_version' | 'os' | 'os_version' | 'device' | 'screen_class'
>

const TRACKING_TOGGLES: Partial<Record<EventKind, keyof Site['tracking']>> = {
  click: 'autocapture',
  outbound: 'trackOutboundLinks',
  download: 'trackFileDownloads',
  form: 'trackForms',
  error: 'trackErrors',
  vital: 'trackVitals',
}

const dayFormatters = new Map<string, Intl.DateTimeFormat>()
const days = new Map<string, string>()
/**
 * The site-local calendar day of an instant, YYYY-MM-DD. Every zone's offset is a multiple of
 * 15 minutes, so the day is the same throughout each quarter hour: cached by that.
 */
export function localDay(date: Date, timezone: string): string {
  const key = `${timezone}|${Math.floor(date.getTime() / 900_000)}`
  let day = days.get(key)
  if (day === undefined) {
    let f = dayFormatters.get(timezone)
    if (!f) {
      f = new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' })
      dayFormatters.set(timezone, f)
    }
    if (days.size > 100_000) days.clear()
    day = f.format(date)
    days.set(key, day)
  }
  return day
}

function ipExcluded(ip: string, rules: string[]): boolean {
  if (!rules.length || !ipaddr.isValid(ip)) return false
  const address = ipaddr.process(ip)
  return rules.some((rule) => {
    try {
      if (!rule.includes('/')) return ipaddr.process(rule).toString() === address.toString()
      const [range, bits] = ipaddr.parseCIDR(rule)
      return address.kind() === range.kind() && address.match([range, bits] as never)
    } catch {
      return false
    }
  })
}

/** Memoizes a pure function of a string, within a bound: user agents and referrers repeat a lot. */
function memo<T>(fn: (key: string) => T, size = 5000) {
  const cache = new Map<string, T>()
  return (key: string) => {
    let value = cache.get(key)
    if (value === undefined) {
      if (cache.size >= size) cache.clear()
      value = fn(key)
      cache.set(key, value)
    }
    return value
  }
}

/** What identifies an error group, hashed into its fingerprint: the name, the message with numbers masked, the top frame. */
function errorGroup(error: NonNullable<Hit['error']>): string {
  const message = error.message.replace(/\d+/g, '0').slice(0, 300)
  const frame = (error.stack ?? error.source ?? '').split('\n').find((l) => /\S/.test(l) && !l.includes(error.message.slice(0, 40))) ?? ''
  return `${error.name ?? 'Error'}|${message}|${frame.replace(/:\d+:\d+\)?\s*$/, '').trim()}`
}

/** A hit that passed the site's checks, on its way to a row. */
interface Prepared {
  index: number
  item: IngestItem
  site: Site
  at: number
  url: URL
  pathname: string
  kind: EventKind
  /** The daily salt of the hit's site and site-local day, as the cache holds it. */
  salt: Promise<string>
  visitorId: string
  errorId: string
  run?: Run
}

/** A visitor's hits in this batch, each within the visit gap of the one before. */
interface Run {
  first: Prepared
  until: number
  /** Those of the visit the run belongs to, once known. */
  attrs?: VisitAttrs
  sessionId?: string
  sessionStart?: string
}

const NO_PROPS: Record<string, string> = Object.freeze({}) as Record<string, string>

function stringProps(props: Record<string, unknown> | null | undefined, prefix = ''): Record<string, string> {
  if (!props) return NO_PROPS
  const out: Record<string, string> = {}
  for (const key in props) out[prefix + key] = String(props[key])
  return out
}

/** One literal with every column, visit attributes included, keeps rows in one fast shape. */
function eventRow(p: Prepared): Row {
  const { hit } = p.item
  const { kind, url, run } = p
  const a = run!.attrs!
  let props = stringProps(hit.props)
  if (hit.vital?.attribution) props = { ...props, ...stringProps(hit.vital.attribution, 'attribution.') }
  return {
    site_id: p.site.id, timestamp: clickhouseTime(p.at), name: kind === 'outbound' || kind === 'download' || kind === 'affiliate' ? kind : hit.name, kind,
    visitor_id: p.visitorId, session_id: run!.sessionId, session_start: run!.sessionStart,
    referrer: a.referrer, referrer_source: a.referrer_source, referrer_medium: a.referrer_medium, channel: a.channel,
    utm_source: a.utm_source, utm_medium: a.utm_medium, utm_campaign: a.utm_campaign, utm_term: a.utm_term, utm_content: a.utm_content,
    country_code: a.country_code, region: a.region, city: a.city, latitude: a.latitude, longitude: a.longitude,
    browser: a.browser, browser_version: a.browser_version, os: a.os, os_version: a.os_version, device: a.device, screen_class: a.screen_class,
    hostname: url.hostname, pathname: p.pathname.slice(0, 2000), query: capturedQuery(url, p.site.tracking.capturedQueryParams), collection_source: p.item.source,
    props,
    revenue_amount: hit.revenue ? String(hit.revenue.amount) : '0', revenue_currency: hit.revenue?.currency ?? '',
    link_url: kind === 'form' && hit.form?.action ? hit.form.action : (hit.click?.href ?? ''), selector: hit.click?.selector ?? hit.form?.selector ?? '', element_text: hit.click?.text ?? '',
    element_tag: hit.click?.tag ?? (kind === 'form' ? 'form' : ''), interactive: hit.click?.interactive ? 1 : 0, dead_click: hit.click?.dead ? 1 : 0,
    error_fingerprint: p.errorId, error_name: hit.error?.name ?? '', error_message: hit.error?.message ?? '',
    vital_name: hit.vital?.name ?? '', vital_value: hit.vital?.value ?? 0,
    engaged_ms: hit.engagement?.ms ?? 0, scroll_depth: hit.engagement?.scroll ?? 0,
  }
}

/** The query parameters the site captures, in the order it lists them. */
function capturedQuery(url: URL, names: string[]): string {
  if (!names.length || !url.search) return ''
  const captured = new URLSearchParams()
  for (const name of names) {
    const value = url.searchParams.get(name)
    if (value !== null) captured.set(name, value)
  }
  return captured.toString()
}

/**
 * The one ingestion path of browser hits and imported raw hits: validate against the site,
 * enrich, assign visitor and visit, and hand rows to the sink.
 */
export class Ingestor {
  private readonly salts = new Map<string, Promise<string>>()
  private readonly userAgent = memo(parseUserAgent)
  private readonly bot = memo(classifyBot)
  // a visitor's hits share an address: look each up once
  private readonly geoCache = new Map<string, Promise<Geo | null>>()
  private readonly referrer = memo((key: string) => {
    const cut = key.indexOf(' ')
    return classifyReferrer(key.slice(cut + 1) || null, key.slice(0, cut))
  })

  constructor(
    private readonly deps: {
      /** Where imports look their hits' sites up; live hits come with theirs. */
      sites: SiteDirectory
      store: Store
      sink: EventSink
      geo?: GeoLookup
      now: () => Date
      /** Coalesce concurrent live hits into batches (Node). Workers keep each request's I/O its own. */
      coalesce?: boolean
    },
  ) {}

  get sites(): SiteDirectory {
    return this.deps.sites
  }

  private geo(ip: string): Promise<Geo | null> {
    if (!this.deps.geo) return Promise.resolve(null)
    let geo = this.geoCache.get(ip)
    if (!geo) {
      if (this.geoCache.size > 20_000) this.geoCache.clear()
      geo = this.deps.geo(ip).catch(() => null)
      this.geoCache.set(ip, geo)
    }
    return geo
  }

  private salt(siteId: string, day: string): Promise<string> {
    const key = `${siteId}:${day}`
    let salt = this.salts.get(key)
    if (!salt) {
      if (this.salts.size > 100_000) this.salts.clear()
      salt = this.deps.store.dailySalt(siteId, day, `s_${randomString(32)}`)
      salt.catch(() => this.salts.delete(key))
      this.salts.set(key, salt)
    }
    return salt
  }

  private queue: { item: IngestItem; resolve: (o: IngestOutcome) => void; reject: (e: unknown) => void }[] = []

  /**
   * Ingests one live hit, coalesced with the hits of concurrent requests into one batch: under
   * load, one site lookup, one session script call and one sink write serve many requests.
   */
  submit(item: IngestItem): Promise<IngestOutcome> {
    if (!this.deps.coalesce) return this.ingest([item]).then(([outcome]) => outcome)
    return new Promise((resolve, reject) => {
      if (this.queue.push({ item, resolve, reject }) === 1) {
        setImmediate(() => {
          const batch = this.queue
          this.queue = []
          this.ingest(batch.map((q) => q.item)).then(
            (outcomes) => batch.forEach((q, i) => q.resolve(outcomes[i])),
            (err) => batch.forEach((q) => q.reject(err)),
          )
        })
      }
    })
  }

  /** Stores bot rows of server-side collection; they count as usage of kind "bot", which is not billed. */
  async writeBots(orgId: string, rows: Row[]) {
    if (!rows.length) return
    const month = this.deps.now().toISOString().slice(0, 7)
    await this.deps.sink.write({ events: [], bots: rows, usage: new Map([[orgId, new Map([[month, { bot: rows.length }]])]]) })
  }

  async ingest(items: IngestItem[]): Promise<IngestOutcome[]> {
    const outcomes: IngestOutcome[] = new Array(items.length)
    const now = this.deps.now().getTime()

    // 1. checks against the site's settings; nothing here waits
    const prepared: Prepared[] = []
    const bots: Row[] = []
    const botOrgs: string[] = []
    const salts = new Set<Promise<string>>()
    items.forEach((item, index) => {
      const { hit, site } = item
      if (!site) return void (outcomes[index] = { status: 'rejected', error: `site: unknown site "${hit.site}"` })
      const at = hit.timestamp ? Date.parse(hit.timestamp) : item.receivedAt.getTime()
      if (at > now + 5 * 60_000) return void (outcomes[index] = { status: 'rejected', error: 'timestamp: in the future' })
      const url = new URL(hit.url)
      const pathname = site.tracking.hashRouting && url.hash.startsWith('#/') ? `${url.pathname}${url.hash.slice(1)}` : url.pathname
      if (!site.standaloneEnabled) return void (outcomes[index] = { status: 'dropped', reason: 'the site does not collect first-party data' })
      if (ipExcluded(item.ip, site.tracking.excludedIps)) return void (outcomes[index] = { status: 'dropped', reason: 'excluded IP' })
      if (site.tracking.excludedPaths.some((p) => pathMatches(p, pathname))) return void (outcomes[index] = { status: 'dropped', reason: 'excluded path' })

      const bot: BotInfo | null = item.userAgent ? this.bot(item.userAgent) : { name: 'unknown', kind: 'other' }
      if (bot) {
        if (!site.tracking.includeBots) return void (outcomes[index] = { status: 'dropped', reason: 'bot' })
        bots.push({
          site_id: site.id, timestamp: clickhouseTime(at), bot_name: bot.name, bot_kind: bot.kind, verified: 0,
          collection_source: item.source, hostname: url.hostname, pathname, referrer: hit.referrer ?? '', user_agent: item.userAgent.slice(0, 1000), country_code: item.geo?.country ?? '',
        })
        botOrgs.push(site.orgId)
        return void (outcomes[index] = { status: 'stored' })
      }

      let kind = kindOfName(hit.name)
      if (kind === 'click') kind = linkKind(hit.click?.href, url, site.tracking.affiliatePaths) ?? 'click'
      const toggle = TRACKING_TOGGLES[kind]
      if (toggle && site.tracking[toggle] === false) return void (outcomes[index] = { status: 'dropped', reason: `${toggle} is off` })
      const salt = this.salt(site.id, localDay(new Date(at), site.timezone))
      salts.add(salt)
      prepared.push({ index, item, site, at, url, pathname, kind, salt, visitorId: '', errorId: '0' })
    })

    // 2. visitor ids: the day's salt, then one hash each (error groups hashed alongside)
    // the salts of the batch's days, each awaited once (a settled promise is read after that)
    const saltOf = new Map(await Promise.all([...salts].map(async (salt) => [salt, await salt] as const)))
    const errors = prepared.filter((p) => p.item.hit.error)
    const hashes = await hash64Many([
      ...prepared.map((p) => `${saltOf.get(p.salt)}|${p.site.id}|${p.item.ip}|${p.item.userAgent}`),
      ...errors.map((p) => errorGroup(p.item.hit.error!)),
    ])
    prepared.forEach((p, i) => (p.visitorId = hashes[i]))
    errors.forEach((p, i) => (p.errorId = hashes[prepared.length + i]))

    // 3. runs: in time order, a visitor's hit within the gap of their previous one in this batch
    // surely joins that one's visit, so only a run's first hit may start one. Visit attributes are
    // those of a visit's first hit: they are worked out for runs' first hits only.
    prepared.sort((a, b) => a.at - b.at || a.index - b.index)
    const runs: Run[] = []
    const open = new Map<string, Run>()
    for (const p of prepared) {
      const key = `${p.site.id}:${p.visitorId}`
      let run = open.get(key)
      if (run && p.at - run.until <= VISIT_GAP_MS) run.until = p.at
      else {
        run = { first: p, until: p.at }
        open.set(key, run)
        runs.push(run)
      }
      p.run = run
    }
    const geos = new Map(
      await Promise.all(
        [...new Set(runs.filter((r) => r.first.item.geo === undefined).map((r) => r.first.item.ip))].map(async (ip) => [ip, await this.geo(ip)] as const),
      ),
    )
    for (const run of runs) run.attrs = this.visitAttrs(run.first, run.first.item.geo !== undefined ? run.first.item.geo : (geos.get(run.first.item.ip) ?? null))

    // 4. visits: every run in time order, in one atomic script call for the batch
    const sessions = await this.deps.store.assignSessions(
      runs.map((r) => ({ siteId: r.first.site.id, visitorId: r.first.visitorId, at: r.first.at, until: r.until, candidateId: random64(), attrs: JSON.stringify(r.attrs) })),
      VISIT_GAP_MS,
    )
    // a visit begun in this batch takes the attributes of its first run here; an older one, the stored ones
    const startedHere = new Map<string, VisitAttrs>()
    runs.forEach((run, i) => {
      const session = sessions[i]
      const attrs = session.attrs ? (JSON.parse(session.attrs) as VisitAttrs) : startedHere.get(session.id)
      if (attrs) run.attrs = attrs
      else startedHere.set(session.id, run.attrs!)
      run.sessionId = session.id
      run.sessionStart = clickhouseTime(session.start)
    })

    // 5. rows
    const batch: IngestBatch = { events: [], bots, usage: new Map() }
    const count = (orgId: string, timestamp: string, kind: string) => {
      const month = timestamp.slice(0, 7)
      let months = batch.usage.get(orgId)
      if (!months) batch.usage.set(orgId, (months = new Map()))
      let counts = months.get(month)
      if (!counts) months.set(month, (counts = {}))
      counts[kind] = (counts[kind] ?? 0) + 1
    }
    for (const p of prepared) {
      const row = eventRow(p)
      batch.events.push(row)
      count(p.site.orgId, row.timestamp as string, p.kind)
      outcomes[p.index] = { status: 'stored' }
    }
    bots.forEach((row, i) => count(botOrgs[i], row.timestamp as string, 'bot'))
    if (batch.events.length || batch.bots.length) await this.deps.sink.write(batch)
    return outcomes
  }

  /** The visit-scoped attributes a hit would give the visit it starts. */
  private visitAttrs(p: Prepared, geo: Geo | null): VisitAttrs {
    const ua = this.userAgent(p.item.userAgent)
    const ref = this.referrer(`${p.url.hostname} ${p.item.hit.referrer ?? ''}`)
    const utm = utmFrom(p.url)
    return {
      referrer: ref.referrer.slice(0, 2000), referrer_source: ref.source, referrer_medium: ref.medium, channel: channelFor(ref, utm), ...utm,
      country_code: geo?.country ?? '', region: geo?.region ?? '', city: geo?.city ?? '', latitude: geo?.latitude ?? 0, longitude: geo?.longitude ?? 0,
      browser: ua.browser, browser_version: ua.browserVersion, os: ua.os, os_version: ua.osVersion, device: ua.device, screen_class: screenClass(p.item.hit.screenWidth),
    }
  }
}
