import ipaddr from 'ipaddr.js'
import type { Site } from '../sites/sites'
import { type BotInfo, classifyBot } from './bots'
import { linkKind, pathMatches } from './enrich'
import { type EventKind, kindOfName } from './hit'
import { memo } from './memo'
import type { IngestItem, IngestOutcome } from './item'

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
const botOf = memo(classifyBot)

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

/**
 * Checks a hit against its site's settings: an unknown site or a future time is rejected; a site
 * not collecting first-party data, an excluded address or path, a bot the site does not keep or
 * a kind the site does not track is dropped. Nothing here waits.
 */
export function screen(item: IngestItem, index: number, now: number): AcceptedHit | BotHit | IngestOutcome {
  const { hit, site } = item
  if (!site) return { status: 'rejected', error: `site: unknown site "${hit.site}"` }
  const at = hit.timestamp ? Date.parse(hit.timestamp) : item.receivedAt.getTime()
  if (at > now + CLOCK_SKEW_MS) return { status: 'rejected', error: 'timestamp: in the future' }
  const url = new URL(hit.url)
  const pathname = site.tracking.hashRouting && url.hash.startsWith('#/') ? `${url.pathname}${url.hash.slice(1)}` : url.pathname
  if (!site.standaloneEnabled) return { status: 'dropped', reason: 'the site does not collect first-party data' }
  if (ipExcluded(item.ip, site.tracking.excludedIps)) return { status: 'dropped', reason: 'excluded IP' }
  if (site.tracking.excludedPaths.some((p) => pathMatches(p, pathname))) return { status: 'dropped', reason: 'excluded path' }

  // a hit without a user agent is a bot of no name
  const bot = item.userAgent ? botOf(item.userAgent) : { name: 'unknown', kind: 'other' as const }
  if (bot) {
    if (!site.tracking.includeBots) return { status: 'dropped', reason: 'bot' }
    return { index, item, site, at, url, pathname, bot }
  }

  let kind = kindOfName(hit.name)
  if (kind === 'click') kind = linkKind(hit.click?.href, url, site.tracking.affiliatePaths) ?? 'click'
  const toggle = TRACKING_TOGGLES[kind]
  if (toggle && site.tracking[toggle] === false) return { status: 'dropped', reason: `${toggle} is off` }
  return { index, item, site, at, url, pathname, kind }
}
