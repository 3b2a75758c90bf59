import ipaddr from 'ipaddr.js'
import type { Site } from '../sites/sites'
import { type BotInfo, classifyBot } from './bots'
import { linkKind, pathMatches } from './enrich'
import { type EventKind, kindOfName } from './hit'
import { memo } from './memo'
import type { DropCode, IngestItem, IngestOutcome } from './item'

/** What every hit that passed its site's checks carries on. */
interface Passed {
  /** Its position in the batch, where its outcome goes. */
  readonly index: number
  readonly item: IngestItem
  readonly site: Site
  /** When it happened, epoch milliseconds. */
  readonly at: number
  readonly url: URL
  /** The path, with the hash route when the site uses hash routing. */
  readonly pathname: string
}

/** A human's hit, on its way to an event row. */
export interface AcceptedHit extends Passed {
  readonly kind: EventKind
}

/** A bot's hit on a site that keeps them, on its way to a bot row. */
export interface BotHit extends Passed {
  readonly bot: BotInfo
}

const TRACKING_TOGGLES: Partial<Record<EventKind, keyof Site['tracking']>> = {
  click: 'autocapture',
  outbound: 'trackOutboundLinks',
  download: 'trackFileDownloads',
  form: 'trackForms',
  error: 'trackErrors',
  vital: 'trackVitals',
}

/** How far ahead of the server's clock a hit's time may be. */
const CLOCK_SKEW_MS = 5 * 60_000

// user agents repeat a lot
export const botOf = memo(classifyBot)

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

/** Page hostnames of a developer's own machine: hits from them are dropped unless the site allows the name. */
const LOOPBACK_HOSTNAMES = new Set(['localhost', '127.0.0.1', '[::1]'])

const isUnder = (hostname: string, domain: string) => hostname === domain || hostname.endsWith(`.${domain}`)

/**
 * Whether a page on `hostname` belongs to the site: its domain (the domain without `www.` as
 * well) or a subdomain, its custom domain, or a hostname it allows (or a subdomain of one).
 */
export function hostnameBelongs(hostname: string, site: Site): boolean {
  const domain = site.domain.replace(/^www\./, '')
  if (isUnder(hostname, domain)) return true
  if (site.tracking.customDomain && isUnder(hostname, site.tracking.customDomain)) return true
  return (site.tracking.allowedHostnames ?? []).some((allowed) => isUnder(hostname, allowed))
}

const dropped = (code: DropCode, reason: string): IngestOutcome => ({ status: 'dropped', code, reason })

/**
 * Checks a hit against its site's settings: an unknown site or a future time is rejected; a site
 * not collecting first-party data, a browser's page on another hostname, an excluded address or
 * path, a bot the site does not keep or a kind the site does not track is dropped, with its code.
 * Nothing here waits.
 */
export function screen(item: IngestItem, index: number, now: number): AcceptedHit | BotHit | IngestOutcome {
  const { hit, site } = item
  if (!site) return { status: 'rejected', error: `site: unknown site "${hit.site}"` }
  const at = hit.timestamp ? Date.parse(hit.timestamp) : item.receivedAt.getTime()
  if (at > now + CLOCK_SKEW_MS) return { status: 'rejected', error: 'timestamp: in the future' }
  const url = new URL(hit.url)
  const hashRouting = site.tracking.hashRouting || item.plausible?.hashRouting
  const pathname = hashRouting && url.hash.startsWith('#/') ? `${url.pathname}${url.hash.slice(1)}` : url.pathname
  if (!site.standaloneEnabled) return dropped('not-collecting', 'the site does not collect first-party data')
  // a browser's page must be one of the site's; imported history keeps the hostnames it was recorded with
  if (item.source === 'browser' && !item.plausible?.pageOfListedSite && !hostnameBelongs(url.hostname, site)) {
    return LOOPBACK_HOSTNAMES.has(url.hostname)
      ? dropped('localhost', `the page is on ${url.hostname}; add it to the site's allowedHostnames to count it`)
      : dropped('unknown-hostname', `the page's hostname ${url.hostname} is not ${site.domain}, a subdomain, or an allowed hostname`)
  }
  if (ipExcluded(item.ip, site.tracking.excludedIps)) return dropped('excluded-ip', 'excluded IP')
  if (site.tracking.excludedPaths.some((p) => pathMatches(p, pathname))) return dropped('excluded-path', 'excluded path')

  // a hit without a user agent is a bot of no name
  const bot = item.enriched ? item.enriched.bot : item.userAgent ? botOf(item.userAgent) : { name: 'unknown', kind: 'other' as const }
  if (bot) {
    if (!site.tracking.includeBots) return dropped('bot', `a bot (${bot.name}) and the site does not keep bots`)
    return { index, item, site, at, url, pathname, bot }
  }

  // Plausible's names are the sender's own, apart from its pageviews and engagement reports
  let kind = item.plausible && hit.name !== 'pageview' && hit.name !== 'engagement' ? 'custom' : kindOfName(hit.name)
  if (kind === 'click') kind = linkKind(hit.click?.href, url, site.tracking.affiliatePaths) ?? 'click'
  const toggle = TRACKING_TOGGLES[kind]
  if (toggle && site.tracking[toggle] === false) return dropped('kind-off', `${toggle} is off`)
  return { index, item, site, at, url, pathname, kind }
}
