import ipaddr from 'ipaddr.js'
import { type Hit, parseHit } from './hit'

/*
 * Plausible's Events API payload, as its script, its npm trackers and server-side senders post it
 * to /api/event: `n`/`name`, `u`/`url`, `d`/`domain` (one domain or a comma list), `r`/`referrer`,
 * `p`/`props` (an object, or that object as JSON text), `$`/`revenue`, `i`/`interactive`, `h`/`hash`
 * (hash routing), `w` (screen width), `v` (the tracker's version), and `sd` and `e` (scroll depth and
 * engaged milliseconds) on its engagement events. Our own tracker's hit names its site by snippet
 * in `site`, a field Plausible's payload never has, and never carries `d` or `domain`: the two are
 * told apart by those fields alone.
 */

/** Each accepted field, with the field of our own hit it becomes (or what it is). */
const FIELDS: Record<string, string> = {
  n: 'name',
  name: 'name',
  u: 'url',
  url: 'url',
  d: 'domain',
  domain: 'domain',
  r: 'referrer',
  referrer: 'referrer',
  p: 'props',
  props: 'props',
  $: 'revenue',
  revenue: 'revenue',
  i: 'interactive',
  interactive: 'interactive',
  h: 'hash',
  w: 'screenWidth',
  sd: 'scroll',
  e: 'engaged',
  v: 'version',
}

/** At most this many domains in one comma list. */
export const MAX_PLAUSIBLE_DOMAINS = 10

export interface PlausibleHit {
  /** The domains listed, lower case, each once. */
  domains: string[]
  /** The hit, with `site` left empty: one copy per site the domains name. */
  hit: Hit
  /** The page uses hash routing (`h: 1`): its path includes the `#/` route. */
  hashRouting: boolean
}

type Obj = Record<string, unknown>
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Whether a parsed body is Plausible's payload rather than our own tracker's hit. */
export function isPlausiblePayload(body: unknown): body is Obj {
  return isObject(body) && !('site' in body) && ('d' in body || 'domain' in body)
}

/** An object field that may come as JSON text (Plausible's older trackers send props so). */
function objectOrJson(value: unknown, field: string): unknown {
  if (typeof value !== 'string') return value
  try {
    return JSON.parse(value)
  } catch {
    throw new InvalidPayload(`${field}: expected an object or its JSON text`)
  }
}

class InvalidPayload extends Error {}

function integerField(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max)
    throw new InvalidPayload(`${field}: expected an integer from ${min} to ${max}`)
  return value
}

function flag(value: unknown, field: string): boolean {
  if (value === true || value === 1 || value === '1') return true
  if (value === false || value === 0 || value === '0' || value === null) return false
  throw new InvalidPayload(`${field}: expected true or false`)
}

function convert(body: Obj): PlausibleHit {
  const given: Record<string, string> = {}
  const unknown: string[] = []
  for (const key in body) {
    const field = FIELDS[key]
    if (!field) unknown.push(key)
    else if (given[field] && body[key] !== undefined && body[given[field]] !== undefined)
      throw new InvalidPayload(`${given[field]} and ${key}: send one of them`)
    else if (body[key] !== undefined) given[field] = key
  }
  if (unknown.length) throw new InvalidPayload(`unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}`)
  const value = (field: string) => (given[field] ? body[given[field]] : undefined)
  const named = (field: string) => given[field] ?? field

  const domain = value('domain')
  if (typeof domain !== 'string') throw new InvalidPayload(`${named('domain')}: expected a domain or a comma-separated list of domains`)
  const domains = [...new Set(domain.split(',').map((d) => d.trim().toLowerCase()))]
  if (domains.some((d) => !d || d.length > 253 || /[\s/:]/.test(d)))
    throw new InvalidPayload(`${named('domain')}: expected a domain or a comma-separated list of domains`)
  if (domains.length > MAX_PLAUSIBLE_DOMAINS) throw new InvalidPayload(`${named('domain')}: at most ${MAX_PLAUSIBLE_DOMAINS} domains`)

  const hit: Obj = { site: '-', name: value('name'), url: value('url') }
  if (value('referrer') != null) hit.referrer = value('referrer')
  if (value('screenWidth') != null) hit.screenWidth = value('screenWidth')
  const props = value('props') == null ? undefined : objectOrJson(value('props'), named('props'))
  if (props != null) hit.props = props
  const revenue = value('revenue') == null ? undefined : objectOrJson(value('revenue'), named('revenue'))
  // Plausible's npm tracker sends an empty revenue object with a tagged event that has none
  const noRevenue = revenue == null || (isObject(revenue) && !Object.keys(revenue).length)
  if (!noRevenue)
    hit.revenue =
      isObject(revenue) && typeof revenue.currency === 'string' ? { ...revenue, currency: revenue.currency.toUpperCase() } : revenue
  const interactive = value('interactive') === undefined || flag(value('interactive'), named('interactive'))
  if (value('version') !== undefined && typeof value('version') !== 'string' && typeof value('version') !== 'number')
    throw new InvalidPayload(`${named('version')}: expected a string or a number`)

  const scroll = value('scroll')
  const engaged = value('engaged')
  if (hit.name === 'engagement') {
    // the tracker reports -1 before it could measure the page; engagement time is milliseconds
    const depth = scroll === undefined ? 0 : integerField(scroll, 'sd', -1, 1000)
    hit.engagement = { ms: integerField(engaged ?? 0, 'e', 0, 86_400_000), scroll: Math.min(Math.max(depth, 0), 100) }
  } else if (scroll !== undefined || engaged !== undefined) {
    throw new InvalidPayload(`${scroll !== undefined ? 'sd' : 'e'}: only on an engagement event`)
  }

  const checked = parseHit(hit, 'browser')
  if (typeof checked === 'string') {
    // name the field as the sender spelled it
    const [path, ...rest] = checked.split(':')
    const [head, ...tail] = path.split('.')
    throw new InvalidPayload([[given[head] ?? head, ...tail].join('.'), ...rest].join(':'))
  }
  // Plausible's names other than pageview and engagement are custom events (screening.ts); as in
  // Plausible, the flag only tells custom events apart: pageviews and engagement reports ignore it
  if (!interactive && checked.name !== 'pageview' && checked.name !== 'engagement') checked.interactive = false
  return { domains, hit: checked, hashRouting: value('hash') !== undefined && flag(value('hash'), named('hash')) }
}

/** Checks Plausible's payload and converts it to our hit; what is wrong with it otherwise, naming the field as sent. */
export function parsePlausibleHit(body: Obj): PlausibleHit | string {
  try {
    return convert(body)
  } catch (err) {
    if (err instanceof InvalidPayload) return err.message
    throw err
  }
}

/** The visitor's address as Plausible reads it: the first valid address of X-Forwarded-For. */
export function forwardedAddress(request: Request): string | undefined {
  for (const part of request.headers.get('x-forwarded-for')?.split(',') ?? []) {
    const candidate = part.trim()
    if (ipaddr.isValid(candidate)) return ipaddr.process(candidate).toString()
  }
  return undefined
}
