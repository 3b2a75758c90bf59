import type { CruxAnswersRepository } from './crux-answers-repository'
import { z } from 'zod'
import { OutboundError } from '../network/guarded-fetch'
import { type FormFactor, VITAL_NAMES, type VitalName } from '../reports/query/compile/vitals'
import type { Site } from '../sites/sites'

/**
 * Field data from the Chrome UX Report (CrUX) API: how Chrome users experienced a site's origin
 * over the 28 days CrUX last collected, beside the samples our own tracker sends (`crux=1` on
 * GET /vitals). One POST to `records:queryRecord` per origin and form factor, through the guarded
 * outbound fetch, kept in the key/value store for CRUX_CACHE_SECONDS.
 */

export const DEFAULT_CRUX_API_URL = 'https://chromeuxreport.googleapis.com'
/** CrUX publishes once a day: an answer, or the lack of one (a 404), is kept half a day. */
export const CRUX_CACHE_SECONDS = 12 * 3600
/** A vitals read does not wait longer for CrUX; its own numbers come back either way. */
export const CRUX_TIMEOUT_MS = 5000

/** How a home reaches CrUX; a home without an API key has none. */
export interface CruxConfig {
  /** The Google Cloud API key: a secret, sent to the API only, never logged or answered. */
  apiKey: string
  /** Where the API is, without a trailing slash. */
  baseUrl: string
  timeoutMs: number
}

/** The CrUX configuration of a home's environment: none without CRUX_API_KEY. */
export function cruxConfig(env: { CRUX_API_KEY?: string; CRUX_API_URL?: string }): CruxConfig | undefined {
  if (!env.CRUX_API_KEY) return undefined
  return { apiKey: env.CRUX_API_KEY, baseUrl: (env.CRUX_API_URL || DEFAULT_CRUX_API_URL).replace(/\/+$/, ''), timeoutMs: CRUX_TIMEOUT_MS }
}

/** Our metric names as CrUX names them. */
export const CRUX_METRICS: Record<VitalName, string> = {
  LCP: 'largest_contentful_paint',
  INP: 'interaction_to_next_paint',
  CLS: 'cumulative_layout_shift',
  FCP: 'first_contentful_paint',
  TTFB: 'experimental_time_to_first_byte',
}

/** Our form factors as CrUX names them; without one, CrUX answers every form factor together. */
export const CRUX_FORM_FACTORS: Record<FormFactor, 'PHONE' | 'DESKTOP'> = { phone: 'PHONE', desktop: 'DESKTOP' }

/** One metric as CrUX saw it: its 75th percentile and the shares of page loads in its three bins. */
export interface CruxMetric {
  p75: number | null
  good: number
  needsImprovement: number
  poor: number
}

export interface CruxRecord {
  /** The first and last day CrUX collected over, YYYY-MM-DD. */
  collectionPeriod: { firstDate: string; lastDate: string }
  /** Null for a metric CrUX has no data for. */
  metrics: Record<VitalName, CruxMetric | null>
}

export type CruxAnswer =
  | ({ available: true; origin: string; formFactor: FormFactor | null } & CruxRecord)
  | { available: false; origin: string; formFactor: FormFactor | null; reason: string }

/** Why CrUX gave no record. `notFound`: it has no data for the origin, which holds until CrUX's next day. */
export class CruxUnavailable extends Error {
  constructor(
    readonly reason: string,
    readonly notFound = false,
  ) {
    super(reason)
    this.name = 'CruxUnavailable'
  }
}

// CrUX encodes some numbers as strings (cumulative_layout_shift's bins and p75: "0.05")
const cruxNumber = z.union([
  z.number(),
  z
    .string()
    .regex(/^-?\d+(\.\d+)?(e-?\d+)?$/i)
    .transform(Number),
])
const cruxDate = z.object({ year: z.number().int(), month: z.number().int().min(1).max(12), day: z.number().int().min(1).max(31) })
const cruxMetric = z.object({
  // good, needs improvement and poor; the last bin has no end, and proto3 JSON leaves out a density of 0
  histogram: z.array(z.object({ start: cruxNumber, end: cruxNumber.optional(), density: z.number().min(0).max(1).optional() })).length(3),
  percentiles: z.object({ p75: cruxNumber.optional() }).optional(),
})
const queryRecordAnswer = z.object({
  record: z.object({
    metrics: z.record(z.string(), z.unknown()),
    collectionPeriod: z.object({ firstDate: cruxDate, lastDate: cruxDate }),
  }),
})
const errorAnswer = z.object({
  error: z.object({ code: z.number().optional(), message: z.string().optional(), status: z.string().optional() }),
})

const isoDate = (d: z.infer<typeof cruxDate>) =>
  `${String(d.year).padStart(4, '0')}-${String(d.month).padStart(2, '0')}-${String(d.day).padStart(2, '0')}`

/** A record's metrics and period in our terms; a CrUX metric that is not there is null. */
export function readCruxRecord(json: unknown): CruxRecord | null {
  const parsed = queryRecordAnswer.safeParse(json)
  if (!parsed.success) return null
  const { metrics, collectionPeriod } = parsed.data.record
  const ours = {} as Record<VitalName, CruxMetric | null>
  for (const name of VITAL_NAMES) {
    const given = metrics[CRUX_METRICS[name]]
    if (given === undefined) {
      ours[name] = null
      continue
    }
    const metric = cruxMetric.safeParse(given)
    if (!metric.success) return null
    const [good, needsImprovement, poor] = metric.data.histogram.map((bin) => bin.density ?? 0)
    ours[name] = { p75: metric.data.percentiles?.p75 ?? null, good, needsImprovement, poor }
  }
  return {
    collectionPeriod: { firstDate: isoDate(collectionPeriod.firstDate), lastDate: isoDate(collectionPeriod.lastDate) },
    metrics: ours,
  }
}

/**
 * Asks CrUX for an origin's record (every form factor, or one): the record, or a CruxUnavailable
 * saying why not. Messages never carry the key or the request's URL.
 */
export async function queryCruxRecord(
  fetcher: typeof fetch,
  config: CruxConfig,
  query: { origin: string; formFactor?: FormFactor },
): Promise<CruxRecord> {
  const withoutKey = (text: string) => text.split(config.apiKey).join('[key]').slice(0, 300)
  // the key travels in Google's API-key header, never in a URL that proxies and logs keep
  const url = `${config.baseUrl}/v1/records:queryRecord`
  const body = {
    origin: query.origin,
    ...(query.formFactor ? { formFactor: CRUX_FORM_FACTORS[query.formFactor] } : {}),
    metrics: VITAL_NAMES.map((n) => CRUX_METRICS[n]),
  }
  let res: Response
  let json: unknown
  try {
    res = await fetcher(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-goog-api-key': config.apiKey },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(config.timeoutMs),
    })
    json = await res.json().catch(() => undefined)
  } catch (err) {
    const error = err as Error
    if (error.name === 'TimeoutError' || error.name === 'AbortError')
      throw new CruxUnavailable(`the CrUX API did not answer within ${config.timeoutMs / 1000} s`)
    if (err instanceof OutboundError) throw new CruxUnavailable(`the CrUX API could not be reached: ${withoutKey(error.message)}`)
    throw new CruxUnavailable(`the CrUX API could not be reached (${withoutKey(error.message)})`)
  }
  if (res.ok) {
    const record = readCruxRecord(json)
    if (!record) throw new CruxUnavailable('the CrUX API answered something that is not a CrUX record')
    return record
  }
  const error = errorAnswer.safeParse(json)
  const detail = error.success
    ? `${res.status} ${error.data.error.status ?? ''}${error.data.error.message ? `: ${withoutKey(error.data.error.message)}` : ''}`.trim()
    : `HTTP ${res.status}`
  if (res.status === 404)
    throw new CruxUnavailable(
      `the Chrome UX Report has no field data for ${query.origin}${query.formFactor ? ` on ${query.formFactor}s` : ''}: too few Chrome users visited it in the last 28 days, or the origin is not public`,
      true,
    )
  if (res.status === 400 || res.status === 401 || res.status === 403)
    throw new CruxUnavailable(
      `the CrUX API refused this server's API key (${detail}): check CRUX_API_KEY and that the key may use the Chrome UX Report API`,
    )
  if (res.status === 429)
    throw new CruxUnavailable(`the CrUX API's rate limit for this server's key is used up (${detail}); try again later`)
  throw new CruxUnavailable(`the CrUX API did not answer (${detail})`)
}

export interface CruxDeps {
  repositories: { crux: CruxAnswersRepository }
  fetch: typeof fetch
  crux?: CruxConfig
}

/** The origin CrUX knows the site by: its domain over https, where its pages are served. */
export const cruxOrigin = (site: Site) => `https://${site.domain}`

/**
 * The origins a site may be served at, in the order CrUX is asked: its domain, then the www host
 * of a bare domain (a site registered as example.com is often served at www.example.com, and
 * CrUX keys its data by the exact origin).
 */
export const cruxOrigins = (site: Site) => [cruxOrigin(site), ...(site.domain.startsWith('www.') ? [] : [`https://www.${site.domain}`])]

/**
 * The CrUX field data of the site's origin for a form factor (or all), from the cache when CrUX
 * was asked in the last CRUX_CACHE_SECONDS. Where CrUX has no data for the domain's origin, its www
 * origin is asked next; the answer names the origin it is about. An answer without data says
 * why; only "no data for these origins" is cached among those, since the others (key, rate limit,
 * a failure) may pass.
 */
export async function cruxFieldData(deps: CruxDeps, site: Site, formFactor: FormFactor | undefined): Promise<CruxAnswer> {
  const origins = cruxOrigins(site)
  const echo = { origin: origins[0], formFactor: formFactor ?? null }
  if (!deps.crux) return { available: false, ...echo, reason: 'no CrUX API key is configured on this server (CRUX_API_KEY)' }
  const cacheKey = formFactor ?? 'all'
  const cached = await deps.repositories.crux.get<CruxAnswer>(origins[0], cacheKey)
  if (cached && typeof cached.available === 'boolean') return cached
  let answer: CruxAnswer | undefined
  for (const origin of origins) {
    try {
      answer = {
        available: true,
        origin,
        formFactor: echo.formFactor,
        ...(await queryCruxRecord(deps.fetch, deps.crux, { origin, formFactor })),
      }
      break
    } catch (err) {
      if (!(err instanceof CruxUnavailable)) throw err
      if (!err.notFound) return { available: false, ...echo, reason: err.reason }
    }
  }
  answer ??= {
    available: false,
    ...echo,
    reason: `the Chrome UX Report has no field data for ${origins.join(' or ')}${formFactor ? ` on ${formFactor}s` : ''}: too few Chrome users visited it in the last 28 days, or the origin is not public`,
  }
  await deps.repositories.crux.save(origins[0], cacheKey, answer, CRUX_CACHE_SECONDS)
  return answer
}
