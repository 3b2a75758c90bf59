import { z } from 'zod'
import { wellFormedInput } from './well-formed'

/** Names the collector gives its own kinds; any other name is a custom event. */
export const COLLECTOR_KINDS = ['pageview', 'click', 'error', 'vital', 'engagement', 'form'] as const
export type EventKind = (typeof COLLECTOR_KINDS)[number] | 'custom' | 'outbound' | 'download' | 'affiliate'

type PropValue = string | number | boolean

/**
 * One hit, as the tracker posts it to /api/event and as the raw-hit import reads it
 *. The import adds timestamp, ip and userAgent; the browser's come from the request.
 */
export interface Hit {
  site: string
  name: string
  url: string
  referrer?: string | null
  screenWidth?: number | null
  props?: Record<string, PropValue> | null
  revenue?: { amount: string | number; currency: string } | null
  /** A custom event sent with `false` does not make its visit engaged: it leaves a bounce a bounce */
  interactive?: boolean
  click?: {
    selector?: string
    text?: string
    tag?: string
    href?: string
    interactive?: boolean
    dead?: boolean
    /** Where it landed: fractions (0 to 1) of the document's width and height, sent with the document's size in CSS pixels */
    x?: number
    y?: number
    docWidth?: number
    docHeight?: number
    /** The click that made three on one spot within a second */
    rage?: boolean
  }
  error?: { name?: string; message: string; stack?: string; source?: string; line?: number }
  vital?: {
    name: 'LCP' | 'INP' | 'CLS' | 'FCP' | 'TTFB'
    value: number
    rating?: 'good' | 'needs-improvement' | 'poor'
    attribution?: Record<string, string | number | boolean | null>
  }
  engagement?: { ms: number; scroll: number }
  form?: { selector?: string; action?: string }
  // import only
  timestamp?: string
  ip?: string
  userAgent?: string
}

/*
 * The hit is checked by hand rather than with a zod schema: it is the one payload every collected
 * event goes through, and zod's general machinery cost more than the rest of the parse (3.7 µs a
 * hit, against 0.3). tests/unit/hit.test.ts holds a zod schema of the same rules as the reference
 * and checks both agree on generated payloads.
 */

class InvalidHit extends Error {}

function fail(path: string, message: string): never {
  throw new InvalidHit(`${path}: ${message}`)
}

type Obj = Record<string, unknown>
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

function onlyFields(value: Obj, fields: ReadonlySet<string>, path: string) {
  let unknown: string[] | undefined
  for (const key in value) if (!fields.has(key)) (unknown ??= []).push(key)
  if (unknown)
    throw new InvalidHit(
      `${path ? `${path}: ` : ''}unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}`,
    )
}

function object(value: unknown, path: string, fields: ReadonlySet<string>): Obj {
  if (!isObject(value)) fail(path, 'expected an object')
  onlyFields(value, fields, path)
  return value
}

function text(value: unknown, path: string, max: number, min = 0): string {
  if (typeof value !== 'string') fail(path, 'expected a string')
  if (value.length > max) fail(path, `at most ${max} characters`)
  if (value.length < min) fail(path, min === 1 ? 'must not be empty' : `at least ${min} characters`)
  return value
}

const optionalText = (value: unknown, path: string, max: number) => value === undefined || text(value, path, max)

function optionalTexts(value: Obj, path: string, limits: Record<string, number>) {
  for (const field in limits) optionalText(value[field], `${path}.${field}`, limits[field])
}

function integer(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) fail(path, 'expected an integer')
  if (value < min || value > max) fail(path, `must be from ${min} to ${max}`)
  return value
}

function finite(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(path, 'expected a finite number')
  return value
}

function boolean(value: unknown, path: string) {
  if (value !== undefined && typeof value !== 'boolean') fail(path, 'expected true or false')
}

const HTTP_URL = /^https?:\/\//i

function httpUrl(value: unknown, path: string): string {
  const trimmed = text(value, path, 4000).trim()
  // checked without building the URL: screening parses it where it is used
  if (!HTTP_URL.test(trimmed) || !URL.canParse(trimmed)) fail(path, 'must be an absolute http(s) URL')
  return trimmed
}

const fields = (...names: string[]) => new Set(names)
const BROWSER_FIELDS = fields(
  'site',
  'name',
  'url',
  'referrer',
  'screenWidth',
  'props',
  'revenue',
  'interactive',
  'click',
  'error',
  'vital',
  'engagement',
  'form',
)
const IMPORT_FIELDS = new Set([...BROWSER_FIELDS, 'timestamp', 'ip', 'userAgent'])
const REVENUE_FIELDS = fields('amount', 'currency')
// the optional text fields of the nested objects and their longest lengths; the objects' fields follow
const CLICK_TEXTS = { selector: 500, text: 500, tag: 40, href: 4000 }
const ERROR_TEXTS = { name: 200, stack: 8000, source: 4000 }
const FORM_TEXTS = { selector: 500, action: 4000 }
const CLICK_POSITION = ['x', 'y', 'docWidth', 'docHeight'] as const
const CLICK_FIELDS = fields(...Object.keys(CLICK_TEXTS), 'interactive', 'dead', 'rage', ...CLICK_POSITION)
/** The largest document side taken, in CSS pixels. */
export const MAX_DOCUMENT_SIDE = 1_000_000
const ERROR_FIELDS = fields(...Object.keys(ERROR_TEXTS), 'message', 'line')
const VITAL_FIELDS = fields('name', 'value', 'rating', 'attribution')
const ENGAGEMENT_FIELDS = fields('ms', 'scroll')
const FORM_FIELDS = fields(...Object.keys(FORM_TEXTS))
const VITAL_NAMES = fields('LCP', 'INP', 'CLS', 'FCP', 'TTFB')
const VITAL_RATINGS = fields('good', 'needs-improvement', 'poor')
const AMOUNT = /^-?\d{1,14}(\.\d{1,4})?$/
const CURRENCY = /^[A-Z]{3}$/
const DATETIME = z.regexes.datetime({ offset: true })
const IPV6_CHARACTERS = /^[0-9a-fA-F:.]+$/

/** An IPv6 address as a URL host takes it (embedded IPv4 included). */
function isIPv6(value: string): boolean {
  return IPV6_CHARACTERS.test(value) && URL.canParse(`http://[${value}]`)
}

/** A flat object of strings (at most `maxText` long), finite numbers and booleans, and null where allowed. */
function scalars(value: unknown, path: string, rules: { maxText: number; nullable: boolean; maxKeys?: number; maxKeyLength?: number }) {
  if (!isObject(value)) fail(path, 'expected an object')
  let count = 0
  for (const key in value) {
    if (rules.maxKeys !== undefined && ++count > rules.maxKeys) fail(path, `at most ${rules.maxKeys} properties`)
    if (rules.maxKeyLength !== undefined && (key.length < 1 || key.length > rules.maxKeyLength))
      fail(path, `property names have 1 to ${rules.maxKeyLength} characters`)
    const v = value[key]
    if (typeof v === 'string') text(v, `${path}.${key}`, rules.maxText)
    else if (typeof v === 'number') finite(v, `${path}.${key}`)
    else if (typeof v !== 'boolean' && !(rules.nullable && v === null))
      fail(`${path}.${key}`, `expected a string, number${rules.nullable ? ', boolean or null' : ' or boolean'}`)
  }
}

function checkHit(input: unknown, from: 'browser' | 'import'): Hit {
  if (!isObject(input)) fail('body', 'expected a JSON object')
  // lone surrogates and control characters are repaired before anything is checked or kept (well-formed.ts)
  wellFormedInput(input)
  onlyFields(input, from === 'import' ? IMPORT_FIELDS : BROWSER_FIELDS, '')
  const hit = input
  text(hit.site, 'site', 64, 1)
  if (typeof hit.name !== 'string') fail('name', 'expected a string')
  hit.name = hit.name.trim()
  text(hit.name, 'name', 120, 1)
  hit.url = httpUrl(hit.url, 'url')
  if (hit.referrer != null) text(hit.referrer, 'referrer', 4000)
  if (hit.screenWidth != null) integer(hit.screenWidth, 'screenWidth', 0, 100_000)
  if (hit.props != null) scalars(hit.props, 'props', { maxText: 2000, nullable: false, maxKeys: 30, maxKeyLength: 200 })
  if (hit.revenue != null) {
    const revenue = object(hit.revenue, 'revenue', REVENUE_FIELDS)
    if (!(typeof revenue.amount === 'string' ? AMOUNT.test(revenue.amount) : Number.isFinite(revenue.amount)))
      fail('revenue.amount', 'must be a decimal amount')
    if (typeof revenue.currency !== 'string' || !CURRENCY.test(revenue.currency))
      fail('revenue.currency', 'must be an ISO 4217 code like EUR')
  }
  if (hit.interactive !== undefined) {
    boolean(hit.interactive, 'interactive')
    if (kindOfName(hit.name as string) !== 'custom') fail('interactive', 'only on a custom event')
  }
  if (hit.click !== undefined) {
    const click = object(hit.click, 'click', CLICK_FIELDS)
    optionalTexts(click, 'click', CLICK_TEXTS)
    boolean(click.interactive, 'click.interactive')
    boolean(click.dead, 'click.dead')
    boolean(click.rage, 'click.rage')
    const given = CLICK_POSITION.filter((f) => click[f] !== undefined)
    if (given.length && given.length < CLICK_POSITION.length)
      fail('click', `x, y, docWidth and docHeight come together; ${CLICK_POSITION.filter((f) => !given.includes(f)).join(', ')} missing`)
    if (given.length) {
      for (const f of ['x', 'y'] as const) {
        const v = finite(click[f], `click.${f}`)
        if (v < 0 || v > 1) fail(`click.${f}`, 'must be a fraction from 0 to 1')
      }
      integer(click.docWidth, 'click.docWidth', 1, MAX_DOCUMENT_SIDE)
      integer(click.docHeight, 'click.docHeight', 1, MAX_DOCUMENT_SIDE)
    }
  }
  if (hit.error !== undefined) {
    const error = object(hit.error, 'error', ERROR_FIELDS)
    optionalTexts(error, 'error', ERROR_TEXTS)
    text(error.message, 'error.message', 2000)
    if (error.line !== undefined) integer(error.line, 'error.line', 0, Number.MAX_SAFE_INTEGER)
  }
  if (hit.vital !== undefined) {
    const vital = object(hit.vital, 'vital', VITAL_FIELDS)
    if (!VITAL_NAMES.has(vital.name as string)) fail('vital.name', `must be one of ${[...VITAL_NAMES].join(', ')}`)
    if (finite(vital.value, 'vital.value') < 0) fail('vital.value', 'must not be negative')
    if (vital.rating !== undefined && !VITAL_RATINGS.has(vital.rating as string))
      fail('vital.rating', `must be one of ${[...VITAL_RATINGS].join(', ')}`)
    if (vital.attribution !== undefined) scalars(vital.attribution, 'vital.attribution', { maxText: 1000, nullable: true })
  }
  if (hit.engagement !== undefined) {
    const engagement = object(hit.engagement, 'engagement', ENGAGEMENT_FIELDS)
    integer(engagement.ms, 'engagement.ms', 0, 86_400_000)
    integer(engagement.scroll, 'engagement.scroll', 0, 100)
  }
  if (hit.form !== undefined) {
    const form = object(hit.form, 'form', FORM_FIELDS)
    optionalTexts(form, 'form', FORM_TEXTS)
  }
  if (hit.timestamp !== undefined && (typeof hit.timestamp !== 'string' || !DATETIME.test(hit.timestamp))) {
    fail('timestamp', 'expected an ISO 8601 date and time with an offset, like 2026-11-20T10:00:00Z')
  }
  if (hit.ip !== undefined && (typeof hit.ip !== 'string' || !(z.regexes.ipv4.test(hit.ip) || isIPv6(hit.ip))))
    fail('ip', 'expected an IPv4 or IPv6 address')
  optionalText(hit.userAgent, 'userAgent', 1000)
  return hit as unknown as Hit
}

/**
 * Checks a parsed JSON payload as a hit from the browser (no timestamp, ip or userAgent) or from
 * the import. Returns the hit, which is the input itself with its name and url trimmed, or what is wrong
 * with it, naming the field.
 */
export function parseHit(input: unknown, from: 'browser' | 'import'): Hit | string {
  try {
    return checkHit(input, from)
  } catch (err) {
    if (err instanceof InvalidHit) return err.message
    throw err
  }
}

/** The kind a hit's name implies, before the link rules (outbound, download, affiliate) refine clicks. */
export function kindOfName(name: string): EventKind {
  return (COLLECTOR_KINDS as readonly string[]).includes(name) ? (name as EventKind) : 'custom'
}

/** Each collector kind must carry its fields. */
export function missingKindField(hit: Hit): string | null {
  const required: Partial<Record<EventKind, keyof Hit>> = { click: 'click', error: 'error', vital: 'vital', engagement: 'engagement' }
  const field = required[kindOfName(hit.name)]
  return field && !hit[field] ? `${field}: required for a ${hit.name} event` : null
}
