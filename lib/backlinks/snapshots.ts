import type { SourceServices } from '../integrations/source-services'
import type { Site } from '../sites/sites'
import { execute } from '../storage/clickhouse/execute'
import { type Fragment, bind, sql } from '../storage/clickhouse/sql'
import { clickhouseTime } from '../storage/clickhouse/time'
import { type LinkType, linkUrl, tldOf, urlDomain } from './links'

/**
 * The day's snapshot of a site's link set, and the events that comparing it with the previous
 * day's gives: `new` (never seen before), `regained` (seen before, absent from the previous
 * snapshot), `lost` (in the previous snapshot, not now; or dofollow then and nofollow now). A day
 * may be snapshotted several times (each run): its latest snapshot is the day's, so events never
 * come from a provider's word alone, only from two snapshots.
 */

/** A referrer of the site's pageviews: its URL (fragment cut), the visits it sent, its last (epoch ms). */
export interface Referrer {
  url: string
  visits: number
  lastMs: number
}

/** Days a provider's list stays in the link set after its last fetch (a provider that fails for a day does not lose every link). */
const PROVIDER_KEEP_DAYS = 7

export type FoundBy = 'discovered' | 'provider' | 'both'

interface LinkRow {
  source_url: string
  target_url: string
  anchor: string
  rel: LinkType
  image: number
  title: string
  domain_authority?: number | null
  first_seen?: string | null
}

/** The latest snapshot of each day of the site: `(day, taken_at) IN` this. */
export const latestTakes = (siteId: string) =>
  sql`(SELECT day, max(taken_at) FROM backlink_days WHERE site_id = ${bind('UUID', siteId)} GROUP BY day)`

/** The links a check of each page last confirmed (a failed or blocked check keeps the state before it). */
const discoveredSql = (siteId: string): Fragment => sql`
  SELECT source_url, target_url, anchor, rel, image, title FROM backlink_checks
  WHERE site_id = ${bind('UUID', siteId)} AND outcome = 'linked' AND (source_url, checked_at) IN (
    SELECT source_url, max(checked_at) FROM backlink_checks
    WHERE site_id = ${bind('UUID', siteId)} AND outcome IN ('linked', 'unlinked', 'gone') GROUP BY source_url)`

export async function takeSnapshot(services: Pick<SourceServices, 'clickhouse'>, site: Site, now: Date, referrers: Referrer[]) {
  const ch = services.clickhouse
  const id = bind('UUID', site.id)
  const day = now.toISOString().slice(0, 10)
  const [discovered, lastFetch, prior, previousTake, states] = await Promise.all([
    execute<LinkRow>(ch, discoveredSql(site.id)),
    execute<{ at: string | null; authority: number | null }>(
      ch,
      sql`SELECT max(fetched_at) AS at, argMax(domain_authority, fetched_at) AS authority
          FROM backlink_provider_links WHERE site_id = ${id} AND source_url = '' AND fetched_at >= ${bind('DateTime64(3)', clickhouseTime(now.getTime() - PROVIDER_KEEP_DAYS * 86_400_000))}
          HAVING count() > 0`,
    ),
    execute<{ source_url: string; target_url: string; first: string }>(
      ch,
      sql`SELECT source_url, target_url, toString(min(first_seen)) AS first FROM backlink_snapshots WHERE site_id = ${id} AND day < ${bind('Date', day)} GROUP BY source_url, target_url`,
    ),
    execute<{ day: string; last_take: string }>(
      ch,
      sql`SELECT day, max(taken_at) AS last_take FROM backlink_days WHERE site_id = ${id} AND day < ${bind('Date', day)}
          GROUP BY day ORDER BY day DESC LIMIT 1`,
    ),
    execute<{ source_url: string; last_outcome: string }>(
      ch,
      sql`SELECT source_url, argMax(outcome, checked_at) AS last_outcome FROM backlink_checks
          WHERE site_id = ${id} AND outcome IN ('linked', 'unlinked', 'gone') GROUP BY source_url`,
    ),
  ])
  const provided = lastFetch[0]?.at
    ? await execute<LinkRow>(
        ch,
        sql`SELECT source_url, target_url, anchor, rel, image, title, domain_authority, toString(first_seen) AS first_seen FROM backlink_provider_links
            WHERE site_id = ${id} AND fetched_at = ${bind('DateTime64(3)', lastFetch[0].at)} AND source_url != ''`,
      )
    : []
  const previous = previousTake[0]
    ? await execute<LinkRow & { domain: string; found_by: FoundBy }>(
        ch,
        sql`SELECT source_url, target_url, anchor, rel, image, title, domain, found_by FROM backlink_snapshots
            WHERE site_id = ${id} AND day = ${bind('Date', previousTake[0].day)} AND taken_at = ${bind('DateTime64(3)', previousTake[0].last_take)}`,
      )
    : []

  // the link set: our own confirmations over the provider's list, each link once
  const key = (l: { source_url: string; target_url: string }) => `${l.source_url} ${l.target_url}`
  const links = new Map<string, LinkRow & { found_by: FoundBy; domain_authority: number | null; provider_first: string | null }>()
  for (const l of provided)
    links.set(key(l), { ...l, found_by: 'provider', domain_authority: l.domain_authority ?? null, provider_first: l.first_seen ?? null })
  for (const l of discovered) {
    const had = links.get(key(l))
    links.set(key(l), {
      ...l,
      found_by: had ? 'both' : 'discovered',
      domain_authority: had?.domain_authority ?? null,
      provider_first: had?.provider_first ?? null,
    })
  }
  const firstSeen = new Map(prior.map((p) => [key(p), p.first]))
  const rows = [...links.values()].map((l) => {
    const domain = urlDomain(l.source_url) ?? ''
    return {
      site_id: site.id,
      day,
      taken_at: clickhouseTime(now),
      source_url: l.source_url,
      target_url: l.target_url,
      domain,
      tld: tldOf(domain),
      anchor: l.anchor,
      rel: l.rel,
      image: Number(l.image),
      title: l.title,
      found_by: l.found_by,
      first_seen: firstSeen.get(key(l)) ?? day,
      domain_authority: l.domain_authority,
    }
  })

  // events against the previous day's snapshot
  const visits = new Map<string, number>()
  for (const r of referrers) {
    const url = linkUrl(r.url)
    if (url) visits.set(url, (visits.get(url) ?? 0) + r.visits)
  }
  const previousByKey = new Map(previous.map((p) => [key(p), p]))
  const previousDomains = new Set(previous.map((p) => p.domain))
  const outcome = new Map(states.map((s) => [s.source_url, s.last_outcome]))
  const event = (kind: string, reason: string, l: (typeof rows)[number] | (typeof previous)[number], domain: string) => ({
    site_id: site.id,
    day,
    taken_at: clickhouseTime(now),
    kind,
    reason,
    source_url: l.source_url,
    target_url: l.target_url,
    domain,
    anchor: l.anchor,
    rel: l.rel,
    found_by: l.found_by,
    new_domain: kind !== 'lost' && !previousDomains.has(domain) ? 1 : 0,
    visits: visits.get(l.source_url) ?? 0,
  })
  const events = []
  // the first snapshot has nothing to compare with: no events
  for (const r of previousTake[0] ? rows : []) {
    const before = previousByKey.get(key(r))
    if (!before) events.push(event(firstSeen.has(key(r)) ? 'regained' : 'new', '', r, r.domain))
    else if (before.rel === 'dofollow' && r.rel !== 'dofollow') events.push(event('lost', r.rel, r, r.domain))
  }
  for (const p of previous) {
    if (links.has(key(p))) continue
    const state = outcome.get(p.source_url)
    const reason = state === 'gone' ? 'page_gone' : state === 'unlinked' ? 'link_removed' : 'not_listed'
    events.push(event('lost', reason, p, p.domain))
  }
  const count = (type: LinkType) => rows.filter((r) => r.rel === type).length
  const summary = {
    site_id: site.id,
    day,
    taken_at: clickhouseTime(now),
    links: rows.length,
    domains: new Set(rows.map((r) => r.domain)).size,
    dofollow: count('dofollow'),
    nofollow: count('nofollow'),
    ugc: count('ugc'),
    sponsored: count('sponsored'),
    authority: lastFetch[0]?.authority ?? null,
  }
  if (rows.length) await ch.insert('backlink_snapshots', rows)
  if (events.length) await ch.insert('backlink_events', events)
  // last: the day's row is what makes this snapshot the day's
  await ch.insert('backlink_days', [summary])
  return { links: rows.length, events: events.length }
}
