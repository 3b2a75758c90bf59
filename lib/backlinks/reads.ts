import type { SourceServices } from '../integrations/source-services'
import { ApiError } from '../core/errors'
import type { Site } from '../sites/sites'
import { execute } from '../storage/clickhouse/execute'
import { type Fragment, bind, empty, join, sql } from '../storage/clickhouse/sql'
import { clickhouseTime } from '../storage/clickhouse/time'
import { LINK_TYPES, type LinkType, isOriginOnly, linkUrl, urlDomain } from './links'
import { type FoundBy, latestTakes } from './snapshots'
import { referrersSince } from './discover'

/** GET /backlinks (docs/backlinks.md): the latest snapshot, its movement, lists and distributions. */

const DAY_MS = 86_400_000
/** The movement's and the visits' window. */
export const MOVEMENT_DAYS = 30
/** Days of the authority trend. */
const TREND_DAYS = 90

export interface BacklinkParams {
  type?: LinkType
  tld?: string
  domain?: string
  search?: string
  limit?: number
  offset?: number
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const num = (v: unknown) => Number(v ?? 0)

export interface BacklinkEvent {
  day: string
  kind: 'new' | 'lost' | 'regained'
  reason: string | null
  from: string
  to: string
  domain: string
  anchor: string
  rel: LinkType
  foundBy: string
  newDomain: boolean
  visits: number
}

/** The events of the days [fromDay, toDay] (UTC, YYYY-MM-DD), newest first; with `kinds`, those only. */
export async function backlinkEvents(
  clickhouse: SourceServices['clickhouse'],
  siteId: string,
  fromDay: string,
  toDay: string,
  options: { kinds?: string[]; limit?: number } = {},
): Promise<BacklinkEvent[]> {
  const rows = await execute<Record<string, string | number>>(
    clickhouse,
    sql`SELECT day, kind, reason, source_url, target_url, domain, anchor, rel, found_by, new_domain, visits
        FROM backlink_events WHERE site_id = ${bind('UUID', siteId)} AND day >= ${bind('Date', fromDay)} AND day <= ${bind('Date', toDay)}
          AND (day, taken_at) IN ${latestTakes(siteId)}
          ${options.kinds ? sql`AND has(${bind('Array(String)', options.kinds)}, kind)` : empty}
        ORDER BY day DESC, kind, visits DESC, source_url, target_url
        ${options.limit ? sql`LIMIT ${bind('UInt32', options.limit)}` : empty}`,
  )
  return rows.map((r) => ({
    day: String(r.day),
    kind: r.kind as BacklinkEvent['kind'],
    reason: r.reason ? String(r.reason) : null,
    from: String(r.source_url),
    to: String(r.target_url),
    domain: String(r.domain),
    anchor: String(r.anchor),
    rel: r.rel as LinkType,
    foundBy: String(r.found_by),
    newDomain: num(r.new_domain) === 1,
    visits: num(r.visits),
  }))
}

/** New and lost links and referring domains per day (markers). */
export async function backlinkDays(clickhouse: SourceServices['clickhouse'], siteId: string, fromDay: string, toDay: string) {
  const rows = await execute<{ day: string; new_links: number; lost_links: number; new_domains: number; lost_domains: number }>(
    clickhouse,
    sql`SELECT day, countIf(kind IN ('new', 'regained')) AS new_links, countIf(kind = 'lost') AS lost_links,
          uniqExactIf(domain, kind IN ('new', 'regained') AND new_domain = 1) AS new_domains,
          uniqExactIf(domain, kind = 'lost' AND reason != 'nofollow') AS lost_domains
        FROM backlink_events WHERE site_id = ${bind('UUID', siteId)} AND day >= ${bind('Date', fromDay)} AND day <= ${bind('Date', toDay)}
          AND (day, taken_at) IN ${latestTakes(siteId)}
        GROUP BY day ORDER BY day`,
  )
  return rows.map((r) => ({
    day: r.day,
    newLinks: num(r.new_links),
    lostLinks: num(r.lost_links),
    newDomains: num(r.new_domains),
    lostDomains: num(r.lost_domains),
  }))
}

export async function backlinks(services: SourceServices, site: Site, params: BacklinkParams) {
  const ch = services.clickhouse
  const id = bind('UUID', site.id)
  const limit = params.limit ?? 10
  const offset = params.offset ?? 0
  if (params.type && !LINK_TYPES.includes(params.type)) throw new ApiError(400, 'type: must be dofollow, nofollow, ugc or sponsored')
  const now = services.now().getTime()
  const today = day(now)
  const windowFrom = day(now - (MOVEMENT_DAYS - 1) * DAY_MS)

  const takes = await execute<{ day: string; taken_at: string; links: number; domains: number; authority: number | null }>(
    ch,
    sql`SELECT day, taken_at, links, domains, dofollow, nofollow, ugc, sponsored, authority
        FROM backlink_days WHERE site_id = ${id} AND (day, taken_at) IN ${latestTakes(site.id)} ORDER BY day DESC`,
  )
  const latest = takes[0] as (typeof takes)[number] & Record<LinkType, number>
  const before = takes.find((t) => t.day <= day(now - MOVEMENT_DAYS * DAY_MS))
  const inLatest = latest
    ? sql`site_id = ${id} AND day = ${bind('Date', latest.day)} AND taken_at = ${bind('DateTime64(3)', latest.taken_at)}`
    : sql`0`
  const filters: Fragment[] = [inLatest]
  if (params.type) filters.push(sql`rel = ${bind('String', params.type)}`)
  if (params.tld) filters.push(sql`tld = ${bind('String', params.tld.toLowerCase().replace(/^\./, ''))}`)
  if (params.domain) filters.push(sql`domain = ${bind('String', params.domain.toLowerCase().replace(/^www\./, ''))}`)
  if (params.search) filters.push(sql`positionCaseInsensitiveUTF8(anchor, ${bind('String', params.search)}) > 0`)
  const where = join(filters, ' AND ')
  const since = new Date(Date.parse(`${windowFrom}T00:00:00Z`))
  const visitsCte = sql`WITH visits AS (
      SELECT cutFragment(referrer) AS url, uniqExact(session_id) AS visits FROM events
      WHERE site_id = ${id} AND toDate(timestamp) >= ${bind('Date', windowFrom)} AND timestamp >= ${bind('DateTime64(3)', clickhouseTime(since))}
        AND kind = 'pageview' AND referrer != '' GROUP BY url)`

  const [filtered, domainRows, linkRows, anchors, types, tlds, referrers, events, trend] = await Promise.all([
    execute<Record<string, number | string>>(
      ch,
      sql`SELECT count() AS links, uniqExact(domain) AS domains, countIf(rel = 'dofollow') AS dofollow, countIf(rel = 'nofollow') AS nofollow,
            countIf(rel = 'ugc') AS ugc, countIf(rel = 'sponsored') AS sponsored, countIf(image = 1) AS images
          FROM backlink_snapshots WHERE ${where}`,
    ),
    execute<Record<string, number | string | null>>(
      ch,
      sql`SELECT domain, any(tld) AS domain_tld, count() AS links, countIf(rel = 'dofollow') AS dofollow, toString(min(first_seen)) AS first_seen,
            max(domain_authority) AS authority, groupUniqArray(found_by) AS found_set
          FROM backlink_snapshots WHERE ${where} GROUP BY domain ORDER BY links DESC, domain LIMIT ${bind('UInt32', limit)} OFFSET ${bind('UInt32', offset)}`,
    ),
    execute<Record<string, number | string>>(
      ch,
      sql`${visitsCte}
          SELECT s.source_url AS source_url, s.target_url AS target_url, s.domain AS domain, s.anchor AS anchor, s.rel AS rel, s.image AS image,
            s.title AS title, toString(s.first_seen) AS first_seen, s.found_by AS found_by, v.visits AS visits
          FROM (SELECT * FROM backlink_snapshots WHERE ${where}) AS s LEFT JOIN visits AS v ON v.url = s.source_url
          ORDER BY visits DESC, s.first_seen, s.source_url, s.target_url LIMIT ${bind('UInt32', limit)} OFFSET ${bind('UInt32', offset)}`,
    ),
    execute<{ anchor: string; links: number }>(
      ch,
      sql`SELECT anchor, count() AS links FROM backlink_snapshots WHERE ${where} GROUP BY anchor ORDER BY links DESC, anchor LIMIT ${bind('UInt32', limit)}`,
    ),
    execute<{ rel: string; links: number }>(ch, sql`SELECT rel, count() AS links FROM backlink_snapshots WHERE ${where} GROUP BY rel`),
    execute<{ tld: string; links: number; domains: number }>(
      ch,
      sql`SELECT tld, count() AS links, uniqExact(domain) AS domains FROM backlink_snapshots WHERE ${where} GROUP BY tld ORDER BY links DESC, tld LIMIT ${bind('UInt32', limit)}`,
    ),
    referrersSince(services, site.id, since),
    backlinkEvents(ch, site.id, windowFrom, today),
    execute<{ day: string; authority: number }>(
      ch,
      sql`SELECT day, authority FROM backlink_days WHERE site_id = ${id} AND day >= ${bind('Date', day(now - TREND_DAYS * DAY_MS))}
            AND authority IS NOT NULL AND (day, taken_at) IN ${latestTakes(site.id)} ORDER BY day`,
    ),
  ])

  // visits the referring domains sent in the window, and the domains that sent visits from their origin only
  const domainVisits = new Map<string, number>()
  const originOnly = new Set<string>()
  for (const r of referrers) {
    const domain = urlDomain(r.url)
    if (!domain) continue
    domainVisits.set(domain, (domainVisits.get(domain) ?? 0) + r.visits)
    if (isOriginOnly(r.url)) originOnly.add(domain)
  }
  const f = filtered[0] ?? {}
  const linkedDomains = latest
    ? new Set(
        (
          await execute<{ domain: string }>(
            ch,
            sql`SELECT DISTINCT domain FROM backlink_snapshots WHERE ${inLatest} AND has(${bind('Array(String)', [...originOnly])}, domain)`,
          )
        ).map((r) => r.domain),
      )
    : new Set<string>()
  const trafficOnly = [...originOnly]
    .filter((d) => !linkedDomains.has(d))
    .filter((d) => !params.domain || d === params.domain.toLowerCase().replace(/^www\./, ''))
    .map((domain) => ({ domain, visits: domainVisits.get(domain) ?? 0 }))
    .sort((a, b) => b.visits - a.visits || a.domain.localeCompare(b.domain))
  const foundBy = (list: unknown): FoundBy => {
    const set = new Set(Array.isArray(list) ? list.map(String) : [])
    return set.has('both') || (set.has('discovered') && set.has('provider')) ? 'both' : set.has('provider') ? 'provider' : 'discovered'
  }
  const counts = (t: Record<string, unknown> | undefined) => ({
    links: num(t?.links),
    referringDomains: num(t?.domains),
    dofollow: num(t?.dofollow),
    nofollow: num(t?.nofollow),
    ugc: num(t?.ugc),
    sponsored: num(t?.sponsored),
  })
  const current = counts(latest)
  const previous = before ? counts(before) : null
  const eventList = (kind: BacklinkEvent['kind']) =>
    events
      .filter((e) => e.kind === kind)
      .slice(0, limit)
      .map(({ kind: _, ...e }) => e)
  const provider = services.backlinkProvider
  return {
    snapshotDay: latest?.day ?? null,
    sources: { discovered: !!services.crawler, provider: provider?.name ?? null },
    counts: { ...current, trafficOnlyDomains: trafficOnly.length },
    movement: {
      days: MOVEMENT_DAYS,
      since: before?.day ?? null,
      links: previous ? current.links - previous.links : null,
      referringDomains: previous ? current.referringDomains - previous.referringDomains : null,
      dofollow: previous ? current.dofollow - previous.dofollow : null,
      new: events.filter((e) => e.kind === 'new').length,
      lost: events.filter((e) => e.kind === 'lost').length,
      regained: events.filter((e) => e.kind === 'regained').length,
    },
    filters: { type: params.type ?? null, tld: params.tld ?? null, domain: params.domain ?? null, search: params.search ?? null },
    filtered: { ...counts({ ...f, domains: f.domains }), imageLinks: num(f.images) },
    topDomains: domainRows.map((d) => ({
      domain: String(d.domain),
      tld: String(d.domain_tld),
      links: num(d.links),
      dofollow: num(d.dofollow),
      firstSeen: String(d.first_seen),
      lastSeen: latest.day,
      visits: domainVisits.get(String(d.domain)) ?? 0,
      authority: d.authority === null || d.authority === undefined ? null : Number(d.authority),
      foundBy: foundBy(d.found_set),
    })),
    trafficOnlyDomains: trafficOnly.slice(0, limit),
    topLinks: linkRows.map((l) => ({
      from: String(l.source_url),
      to: String(l.target_url),
      domain: String(l.domain),
      anchor: String(l.anchor),
      rel: l.rel as LinkType,
      image: num(l.image) === 1,
      title: String(l.title),
      firstSeen: String(l.first_seen),
      lastSeen: latest.day,
      visits: num(l.visits),
      foundBy: l.found_by as FoundBy,
    })),
    events: { new: eventList('new'), lost: eventList('lost'), regained: eventList('regained') },
    authority: provider
      ? {
          available: true as const,
          provider: provider.name,
          current: latest?.authority ?? null,
          trend: trend.map((t) => ({ day: t.day, value: Number(t.authority) })),
        }
      : {
          available: false as const,
          reason: 'no backlink provider is configured (BACKLINKS_API_KEY); links from our own discovery are complete without it',
        },
    distributions: {
      anchors: anchors.map((a) => ({ anchor: a.anchor, links: num(a.links) })),
      types: LINK_TYPES.map((type) => ({ type, links: num(types.find((t) => t.rel === type)?.links) })),
      tlds: tlds.map((t) => ({ tld: t.tld, links: num(t.links), domains: num(t.domains) })),
    },
    paging: { limit, offset },
  }
}

/** A link's target as a path of the site, for the page reads. */
export const targetPath = (url: string) => {
  const u = linkUrl(url)
  return u ? new URL(u).pathname : null
}
