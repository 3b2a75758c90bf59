import type { OperationServices } from './operation-services'
import type { SourceRepositories } from '../integrations/source-services'
import { createApiKey, createOrg, listOrgs } from '../accounts/admin'
import type { CrawlerConfig } from '../crawl/config'
import { crawlSite } from '../crawl/crawl'
import type { DemoWebsite } from './demo-website-node'
import { demoHits } from '../ingest/demo-traffic'
import { importHits, parseImportLine } from '../ingest/import'
import type { IngestItem } from '../ingest/item'
import { createAnnotation } from '../sites/annotations'
import { createFunnel } from '../sites/funnels'
import { createGoal } from '../sites/goals'
import { recordImportRuns } from '../sites/imports'
import { type Site, newSite } from '../sites/sites'

/** The demo site's domain: the one site a first start makes. */
export const DEMO_DOMAIN = 'demo.example.com'
const DAY_MS = 86_400_000

export const DEMO_OWNER = 'owner@demo.example.com'

/** The demo organization, site and keys made on an empty first start. */
export async function createDemo(repositories: SourceRepositories, now: Date) {
  // with an owner, so the team the org read counts is the one org/members lists
  const org = await createOrg(repositories, 'Demo organization', now, DEMO_OWNER)
  const site = newSite({ domain: DEMO_DOMAIN, timezone: 'UTC' }, org.id, now)
  await repositories.sites.create(site)
  const read = await createApiKey(repositories, { orgId: org.id, name: 'demo read key', scope: 'read' }, now)
  const write = await createApiKey(repositories, { orgId: org.id, name: 'demo write key', scope: 'write' }, now)
  return { org, site, readKey: read.key, writeKey: write.key }
}

/**
 * What makes every read of the demo site answer something: goals (one with revenue), a funnel,
 * a few annotations, and, unless `traffic` is false, generated traffic (30 days, and 35 before them for the baselines) with all five
 * vitals, a planted spike and a fading page, recorded as an import run of the site. `flush`
 * stores what the ingestor buffered.
 */
export async function seedDemo(
  services: OperationServices,
  site: Site,
  now: Date,
  options: { traffic: boolean; flush: () => Promise<void> },
) {
  const { repositories } = services
  const goal = (type: 'event' | 'page', name: string, matchValue: string, currency?: string) =>
    createGoal(repositories, site.id, { site_id: site.id, type, name, matchValue, currency }, now)
  const signup = await goal('event', 'Signup', 'Signup')
  const purchase = await goal('event', 'Purchase', 'Purchase', 'EUR')
  await goal('page', 'Saw pricing', '/pricing')
  await createFunnel(
    repositories,
    site.id,
    {
      site_id: site.id,
      name: 'Home to purchase',
      steps: [
        { type: 'page', value: '/', label: 'Home' },
        { type: 'page', value: '/pricing', label: 'Pricing' },
        { type: 'goal', value: signup.id, label: 'Signed up' },
        { type: 'goal', value: purchase.id, label: 'Bought' },
      ],
    },
    now,
  )
  const daysAgo = (days: number) => new Date(now.getTime() - days * DAY_MS).toISOString()
  for (const [title, kind, at] of [
    ['Newsletter: November issue', 'email', daysAgo(20)],
    ['Deployed the new pricing page', 'deploy', daysAgo(12)],
    ['Launch week post on Hacker News', 'content', daysAgo(3)],
  ] as const)
    await createAnnotation(repositories, site, { siteId: site.id, title, kind, at }, now)

  const startedAt = new Date()
  const hits = options.traffic
    ? demoHits({ site: site.snippetId, domain: site.domain, days: 30, visitorsPerDay: 100, end: now, planted: true })
    : []
  const seeded = await importHits(
    (function* () {
      for (const hit of hits) yield JSON.stringify(hit)
    })(),
    services.ingestor,
  )
  await options.flush()
  // the seed is listed under GET /sites/{id}/imports as any import is
  await recordImportRuns(repositories, seeded.bySite, { startedAt, finishedAt: new Date(), error: null })
  return seeded
}

/** The demo site, if this deployment has one (the first start made it). */
export async function findDemoSite(repositories: SourceRepositories): Promise<Site | null> {
  for (const org of await listOrgs(repositories)) {
    const site = (await repositories.sites.list(org.id)).find((s) => s.domain === DEMO_DOMAIN)
    if (site) return site
  }
  return null
}

/** How often the demo's live traffic sends a visitor. */
export const DEMO_LIVE_EVERY_MS = 20_000

/** Sends one generated visit to the demo site as live browser hits, its last hit now. */
export async function sendDemoVisit(services: OperationServices, site: Site, seed: number) {
  const now = services.now().getTime()
  // the first visitor of a whole generated day (tomorrow's, to its last millisecond: a day that
  // ends before its visits begin has none, as one ending early in the morning had), moved so that
  // its visit ends now
  const tomorrow = (Math.floor(now / DAY_MS) + 1) * DAY_MS
  const day = demoHits({
    site: site.snippetId,
    domain: site.domain,
    days: 1,
    visitorsPerDay: 3,
    end: new Date(tomorrow + DAY_MS - 1),
    seed,
  })
  const visit: Record<string, unknown>[] = []
  for (const hit of day) {
    if (visit.length && hit.ip !== visit[0].ip) break
    visit.push(hit)
  }
  if (!visit.length) return
  const shift = now - Date.parse(String(visit[visit.length - 1].timestamp))
  const items: IngestItem[] = []
  for (const hit of visit) {
    const item = parseImportLine(JSON.stringify({ ...hit, timestamp: new Date(Date.parse(String(hit.timestamp)) + shift).toISOString() }))
    if (typeof item !== 'string') items.push({ ...item, receivedAt: new Date(now), source: 'browser', site })
  }
  await services.ingestor.ingest(items)
}

/**
 * A light trickle of live visitors on the demo site while the server runs, so that the realtime,
 * activity and badge reads show someone: one visit every `everyMs`. Returns what stops it.
 */
export function startDemoTraffic(services: OperationServices, site: Site, everyMs = DEMO_LIVE_EVERY_MS): () => void {
  let seed = 1
  const send = () => void sendDemoVisit(services, site, seed++).catch(() => {})
  const timer = setInterval(send, everyMs)
  timer.unref?.()
  send()
  return () => clearInterval(timer)
}

/**
 * The crawler as the demo needs it: the demo site's pages come from its website on loopback (the
 * guarded fetch refuses loopback, so that one origin is fetched directly); every other site as
 * before.
 */
export function withDemoWebsite(config: CrawlerConfig, demoSiteId: string, origin: string): CrawlerConfig {
  const siteOrigin = config.siteOrigin
  return {
    ...config,
    siteOrigin: (site) => (site.id === demoSiteId ? origin : siteOrigin ? siteOrigin(site) : `https://${site.domain}`),
    fetch: (input, init) => {
      const url = input instanceof Request ? input.url : String(input)
      return url.startsWith(`${origin}/`) ? fetch(input, init) : config.fetch(input, init)
    },
  }
}

/**
 * The demo's crawl history: its website's first edition crawled a week before `now`, the second
 * at `now`, so that the page inventory lists its pages and the changes read shows what changed,
 * with word diffs. The website is left on its second edition.
 */
export async function crawlDemoWebsite(services: OperationServices, config: CrawlerConfig, site: Site, website: DemoWebsite, now: Date) {
  // its own server on this process: no need to pace the requests
  const fast = { ...config, hostIntervalMs: 0 }
  website.edition = 'before'
  await crawlSite({ ...services, now: () => new Date(now.getTime() - 7 * DAY_MS) }, fast, site)
  website.edition = 'after'
  const latest = (await services.repositories.sites.get(site.id)) ?? site
  return crawlSite({ ...services, now: () => now }, fast, latest)
}
