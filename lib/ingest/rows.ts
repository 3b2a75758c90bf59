import { clickhouseTime } from '../storage/clickhouse/time'
import { cutText } from './well-formed'
import type { BotInfo } from './bots'
import { channelFor, classifyReferrer, parseUserAgent, screenClass, utmFrom, viewportClass } from './enrich'
import type { Geo } from './geo'
import type { EventKind, Hit } from './hit'
import { hash64Many } from './identity'
import { memo } from './memo'
import type { HitEnrichment, RowHit } from './item'
import { type BotHit, botOf } from './screening'
import type { Visit } from './visits'

/** Where a row came from: the browser tracker, the raw-hit import, server-side collection. */
export type CollectionSource = 'browser' | 'import' | 'server'

/** A row of `events_input` (clickhouse/0004_events_input.sql). */
export interface EventRow {
  site_id: string
  /** DateTime64(3) text, as are all times here */
  timestamp: string
  name: string
  kind: EventKind
  visitor_id: string
  session_id: string
  session_start: string
  referrer: string
  referrer_source: string
  referrer_medium: string
  channel: string
  utm_source: string
  utm_medium: string
  utm_campaign: string
  utm_term: string
  utm_content: string
  country_code: string
  region: string
  city: string
  latitude: number
  longitude: number
  browser: string
  browser_version: string
  os: string
  os_version: string
  device: string
  screen_class: string
  hostname: string
  pathname: string
  query: string
  collection_source: CollectionSource
  props: Record<string, string>
  /** Decimal text, as sent */
  revenue_amount: string
  revenue_currency: string
  link_url: string
  selector: string
  element_text: string
  element_tag: string
  interactive: 0 | 1
  dead_click: 0 | 1
  error_fingerprint: string
  error_name: string
  error_message: string
  vital_name: string
  vital_value: number
  engaged_ms: number
  scroll_depth: number
  /** Where a click landed, in ten-thousandths of the document's width and height; 0 without a position */
  click_x: number
  click_y: number
  /** The document's size in CSS pixels when clicked; 0 for a click without a position and other kinds */
  doc_width: number
  doc_height: number
  rage_click: 0 | 1
  /** The width class of the viewport the hit came from (every kind), '' when the hit had no width */
  viewport_class: string
  /** 1 for a custom event sent as non-interactive: it does not make its visit engaged (no bounce) */
  non_interactive: 0 | 1
}

/** A row of `bot_events`. */
export interface BotRow {
  site_id: string
  timestamp: string
  bot_name: string
  bot_kind: BotInfo['kind']
  /** 1 when the crawler's reverse DNS matched the domains it publishes */
  verified: 0 | 1
  collection_source: CollectionSource
  hostname: string
  pathname: string
  referrer: string
  user_agent: string
  country_code: string
}

/** Visit-scoped attributes: those of the visit's first hit, stamped on every event of the visit. */
export type VisitAttrs = Pick<
  EventRow,
  | 'referrer'
  | 'referrer_source'
  | 'referrer_medium'
  | 'channel'
  | 'utm_source'
  | 'utm_medium'
  | 'utm_campaign'
  | 'utm_term'
  | 'utm_content'
  | 'country_code'
  | 'region'
  | 'city'
  | 'latitude'
  | 'longitude'
  | 'browser'
  | 'browser_version'
  | 'os'
  | 'os_version'
  | 'device'
  | 'screen_class'
>

const userAgentOf = memo(parseUserAgent)
// keyed by the page's host and the referrer, which decide the answer together
const referrerOf = memo((key: string) => {
  const cut = key.indexOf(' ')
  return classifyReferrer(key.slice(cut + 1) || null, key.slice(0, cut))
})

/** A hit's enrichment worked out ahead of the pipeline, off its thread (import-workers-node.ts): the pipeline then uses it as it is. */
export function enrichHit(hit: Pick<Hit, 'url' | 'referrer'>, userAgent: string): HitEnrichment {
  return {
    // as screening has it: a hit without a user agent is a bot of no name
    bot: userAgent ? botOf(userAgent) : { name: 'unknown', kind: 'other' },
    agent: userAgentOf(userAgent),
    referrer: referrerOf(`${new URL(hit.url).hostname} ${hit.referrer ?? ''}`),
  }
}

/** The visit-scoped attributes a hit would give the visit it starts. */
export function visitAttrs(hit: RowHit, url: URL): VisitAttrs {
  const { geo, enriched } = hit
  const ua = enriched ? enriched.agent : userAgentOf(hit.userAgent)
  const ref = enriched ? enriched.referrer : referrerOf(`${url.hostname} ${hit.hit.referrer ?? ''}`)
  const utm = utmFrom(url)
  return {
    referrer: cutText(ref.referrer, 2000),
    referrer_source: ref.source,
    referrer_medium: ref.medium,
    channel: channelFor(ref, utm),
    ...utm,
    country_code: geo?.country ?? '',
    region: geo?.region ?? '',
    city: geo?.city ?? '',
    latitude: geo?.latitude ?? 0,
    longitude: geo?.longitude ?? 0,
    browser: ua.browser,
    browser_version: ua.browserVersion,
    os: ua.os,
    os_version: ua.osVersion,
    device: ua.device,
    screen_class: screenClass(hit.hit.screenWidth),
  }
}

const NO_PROPS: Record<string, string> = Object.freeze({}) as Record<string, string>

function stringProps(props: Record<string, unknown> | null | undefined, prefix = ''): Record<string, string> {
  if (!props) return NO_PROPS
  const out: Record<string, string> = {}
  for (const key in props) out[prefix + key] = String(props[key])
  return out
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

/** Parts of a message that differ between occurrences of one fault, in the order they are masked. */
const VARYING_PARTS: [RegExp, string][] = [
  [/\b[a-z][a-z\d+.-]*:\/\/[^\s'"`<>()]+/gi, '<url>'],
  [/\b[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}\b/gi, '<id>'],
  // tokens mixing letters and digits (hashes, generated ids), not words
  [/\b(?=\w*\d)(?=\w*[a-z])\w{8,}\b/gi, '<id>'],
  [/\d+/g, '<n>'],
]

/** An error message with its URLs, ids and numbers masked, so one fault is one group. */
export function normalizedErrorMessage(message: string): string {
  let text = message
  for (const [pattern, mask] of VARYING_PARTS) text = text.replace(pattern, mask)
  return cutText(text, 300)
}

/** A stack line that names a frame: V8's `at fn (file:1:2)`, or Firefox's and Safari's `fn@file:1:2`. */
const FRAME_LINE = /^\s*at\s|@\S*:\d+/

/** The top frame of the stack (else the script the error came from), without its line and column, which move with every build. */
function topFrame(error: NonNullable<Hit['error']>): string {
  const frame = (error.stack ?? '').split('\n').find((line) => FRAME_LINE.test(line)) ?? error.source ?? ''
  return frame.trim().replace(/:\d+(?::\d+)?(\)?)$/, '$1')
}

/** What identifies an error group, hashed into its fingerprint: the kind, the name, the normalized message, the top frame. */
export function errorGroupKey(kind: EventKind, error: NonNullable<Hit['error']>): string {
  return `${kind}|${error.name ?? 'Error'}|${normalizedErrorMessage(error.message)}|${topFrame(error)}`
}

/** Each hit's error-group fingerprint ('0' for a hit without an error), hashed in one call. */
export async function errorFingerprints(hits: readonly RowHit[]): Promise<string[]> {
  const fingerprints = new Array<string>(hits.length).fill('0')
  const withError: number[] = []
  hits.forEach((h, i) => h.hit.error && withError.push(i))
  if (!withError.length) return fingerprints
  const hashes = await hash64Many(withError.map((i) => errorGroupKey(hits[i].kind, hits[i].hit.error!)))
  withError.forEach((i, n) => (fingerprints[i] = hashes[n]))
  return fingerprints
}

/** A click's position is kept in ten-thousandths of the document (the tracker sends four decimals). */
export const POSITION_SCALE = 10_000

/** Form fields whose text is what a person typed: an older tracker sent it as a click's text. */
const FORM_FIELD_TAGS = new Set(['input', 'textarea', 'select', 'option'])

/** A click's text, kept only where it is a label (never a form field's value). */
function clickLabel(click: Hit['click']): string {
  return !click?.text || FORM_FIELD_TAGS.has((click.tag ?? '').toLowerCase()) ? '' : click.text
}

/** One literal with every column, visit attributes included, keeps rows in one fast shape. */
export function eventRow(h: RowHit, url: URL, visit: Visit<VisitAttrs>, errorFingerprint: string): EventRow {
  const { hit, kind } = h
  const a = visit.attrs
  let props = stringProps(hit.props)
  if (hit.vital?.attribution) props = { ...props, ...stringProps(hit.vital.attribution, 'attribution.') }
  return {
    site_id: h.siteId,
    timestamp: clickhouseTime(h.at),
    name: kind === 'outbound' || kind === 'download' || kind === 'affiliate' ? kind : hit.name,
    kind,
    visitor_id: h.visitorId,
    session_id: visit.id,
    session_start: visit.start,
    referrer: a.referrer,
    referrer_source: a.referrer_source,
    referrer_medium: a.referrer_medium,
    channel: a.channel,
    utm_source: a.utm_source,
    utm_medium: a.utm_medium,
    utm_campaign: a.utm_campaign,
    utm_term: a.utm_term,
    utm_content: a.utm_content,
    country_code: a.country_code,
    region: a.region,
    city: a.city,
    latitude: a.latitude,
    longitude: a.longitude,
    browser: a.browser,
    browser_version: a.browser_version,
    os: a.os,
    os_version: a.os_version,
    device: a.device,
    screen_class: a.screen_class,
    hostname: url.hostname,
    pathname: h.pathname.slice(0, 2000),
    query: capturedQuery(url, h.capturedQueryParams),
    collection_source: h.source,
    props,
    revenue_amount: hit.revenue ? String(hit.revenue.amount) : '0',
    revenue_currency: hit.revenue?.currency ?? '',
    link_url: kind === 'form' && hit.form?.action ? hit.form.action : (hit.click?.href ?? ''),
    selector: hit.click?.selector ?? hit.form?.selector ?? '',
    element_text: clickLabel(hit.click),
    element_tag: hit.click?.tag ?? (kind === 'form' ? 'form' : ''),
    interactive: hit.click?.interactive ? 1 : 0,
    dead_click: hit.click?.dead ? 1 : 0,
    error_fingerprint: errorFingerprint,
    error_name: hit.error?.name ?? '',
    error_message: hit.error?.message ?? '',
    vital_name: hit.vital?.name ?? '',
    vital_value: hit.vital?.value ?? 0,
    engaged_ms: hit.engagement?.ms ?? 0,
    scroll_depth: hit.engagement?.scroll ?? 0,
    click_x: Math.round((hit.click?.x ?? 0) * POSITION_SCALE),
    click_y: Math.round((hit.click?.y ?? 0) * POSITION_SCALE),
    doc_width: hit.click?.docWidth ?? 0,
    doc_height: hit.click?.docHeight ?? 0,
    rage_click: hit.click?.rage ? 1 : 0,
    viewport_class: viewportClass(hit.screenWidth),
    non_interactive: kind === 'custom' && hit.interactive === false ? 1 : 0,
  }
}

/** A bot's hit as a row, from the browser path and from server-side collection alike. */
export function botRow(b: {
  siteId: string
  at: number | Date
  bot: BotInfo
  verified: boolean
  source: CollectionSource
  hostname: string
  pathname: string
  referrer: string | null | undefined
  userAgent: string
  countryCode: string | undefined
}): BotRow {
  return {
    site_id: b.siteId,
    timestamp: clickhouseTime(b.at),
    bot_name: b.bot.name,
    bot_kind: b.bot.kind,
    verified: b.verified ? 1 : 0,
    collection_source: b.source,
    hostname: b.hostname,
    pathname: b.pathname,
    referrer: b.referrer ?? '',
    user_agent: cutText(b.userAgent, 1000),
    country_code: b.countryCode ?? '',
  }
}

/** The bot row of a browser or imported hit, with the country of its address where known. */
export function botRowOf(h: BotHit, geo: Geo | null): BotRow {
  const { item } = h
  return botRow({
    siteId: h.site.id,
    at: h.at,
    bot: h.bot,
    verified: false,
    source: item.source,
    hostname: h.url.hostname,
    pathname: h.pathname,
    referrer: item.hit.referrer,
    userAgent: item.userAgent,
    countryCode: geo?.country,
  })
}
