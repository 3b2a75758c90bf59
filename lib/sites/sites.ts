import { z } from 'zod'
import { ApiError } from '../core/errors'
import { randomString } from '../core/crypto'
import { SOURCES, type Source } from './source'

export { SOURCES, type Source }

/** How a caller names a site: its UUID or its public snippet id. */
export const siteRefSchema = z.string().min(1, 'required').max(64).describe('Site UUID or public snippet id (the data-site value)')

const pathPattern = z.string().min(1).max(500).regex(/^\//, 'must start with /')
const ipOrCidr = z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()])
/** A page hostname as a URL has it: a name (localhost too), an IPv4 address or a bracketed IPv6 one; no scheme, port or path. */
const allowedHostname = z
  .string()
  .trim()
  .toLowerCase()
  .refine((h) => {
    if (!/^[a-z0-9.\-[\]:]{1,253}$/.test(h)) return false
    try {
      return new URL(`http://${h}/`).hostname === h
    } catch {
      return false
    }
  }, 'must be a bare hostname like staging.example.net, localhost or 127.0.0.1 (no scheme, port or path)')
const queryParamName = z.string().regex(/^[A-Za-z0-9_.\-[\]]{1,64}$/, 'must be a query parameter name')

/** A valid IANA zone, in its proper case; an alias (Asia/Kolkata) is kept as written, not swapped for ICU's legacy name. */
export const timezoneSchema = z.string().transform((zone, ctx) => {
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone
    return resolved.toLowerCase() === zone.toLowerCase() ? resolved : zone
  } catch {
    ctx.addIssue({ code: 'custom', message: `unknown IANA time zone "${zone}"` })
    return z.NEVER
  }
})

const hostnamePattern = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/
export const domainSchema = z
  .string()
  .trim()
  .toLowerCase()
  .transform((d) => d.replace(/\.$/, ''))
  .refine((d) => hostnamePattern.test(d), 'must be a bare hostname like example.com (no scheme, port or path)')

export const sourcesSchema = z
  .array(z.enum(SOURCES))
  .min(1)
  .max(2)
  .refine((s) => new Set(s).size === s.length, 'must not repeat a source')

/** The bounds of a site's samplingThreshold: below the minimum a sample is too small to estimate from. */
export const SAMPLING_THRESHOLD_MIN = 1000
export const SAMPLING_THRESHOLD_MAX = 1_000_000_000_000

/** Writable settings, by group. PATCH takes any of these fields flat by name. */
const writable = {
  tracking: {
    includeBots: z.boolean(),
    excludedPaths: z.array(pathPattern).max(100),
    excludedIps: z.array(ipOrCidr).max(100),
    allowedHostnames: z
      .array(allowedHostname)
      .max(50)
      .describe(
        "Page hostnames counted besides the site's domain, its subdomains and its custom domain (a subdomain of one counts too), e.g. a staging host or localhost",
      ),
    capturedQueryParams: z.array(queryParamName).max(50),
    affiliatePaths: z.array(pathPattern).max(50),
    hashRouting: z.boolean(),
    trackOutboundLinks: z.boolean(),
    trackFileDownloads: z.boolean(),
    trackForms: z.boolean(),
    trackErrors: z.boolean(),
    trackVitals: z.boolean(),
    autocapture: z.boolean(),
    samplingThreshold: z
      .number()
      .int()
      .min(SAMPLING_THRESHOLD_MIN)
      .max(SAMPLING_THRESHOLD_MAX)
      .nullable()
      .describe(
        "Events in a read's window above which the reads compiled from raw events answer from a sample of visitors, with the sample fraction and the error (docs: Sampling); null (the default) never samples",
      ),
  },
  changeDetection: {
    changeDetectionEnabled: z.boolean(),
    changeExcludedPaths: z.array(pathPattern).max(100),
  },
  sharing: {
    isPublic: z.boolean().describe('Kept for older clients: true is access public; false takes a public dashboard back to access link'),
    shareLevel: z
      .enum(['none', 'link', 'full'])
      .describe(
        'What a shared dashboard shows: link the dashboard, full its sections too (journeys by visitor id, the activity tape); none is access private. Sent alone, link or full opens a private dashboard to its secret link',
      ),
    publicCounts: z.boolean(),
    publicCountsDial: z.enum(['live', '30d', 'year', 'all']),
  },
  appearance: {
    displayName: z.string().trim().min(1).max(100).nullable(),
    theme: z.enum(['system', 'light', 'dark']),
    accentColor: z.string().regex(/^#[0-9a-fA-F]{6}$/, 'must be a #rrggbb color'),
  },
}
type Group = keyof typeof writable
type GroupValues<G extends Group> = { [K in keyof (typeof writable)[G]]: z.infer<(typeof writable)[G][K]> }

const defaults: { [G in Group]: GroupValues<G> } = {
  tracking: {
    includeBots: false,
    excludedPaths: [],
    excludedIps: [],
    allowedHostnames: [],
    capturedQueryParams: [],
    affiliatePaths: [],
    hashRouting: false,
    trackOutboundLinks: true,
    trackFileDownloads: true,
    trackForms: true,
    trackErrors: true,
    trackVitals: true,
    autocapture: true,
    samplingThreshold: null,
  },
  changeDetection: { changeDetectionEnabled: true, changeExcludedPaths: [] },
  sharing: { isPublic: false, shareLevel: 'none', publicCounts: false, publicCountsDial: 'live' },
  appearance: { displayName: null, theme: 'system', accentColor: '#4f46e5' },
}

/** What the crawler last did for the site (lib/crawl): shown, never written by the API. */
export interface CrawlState {
  crawlStatus: 'pending' | 'ok' | 'failed'
  /** ISO 8601 UTC of the last run; null before the first. */
  lastCrawlAt?: string | null
  /** Pages with at least one snapshot. */
  pagesKnown?: number
  /** Pages the last run could not fetch (a path of '' is the run itself failing), at most 20. */
  crawlErrors?: { path: string; error: string }[]
}

export interface Site {
  id: string
  snippetId: string
  orgId: string
  domain: string
  timezone: string
  sources: Source[]
  primarySource: Source
  standaloneEnabled: boolean
  createdAt: string
  /** Set by proxy-config: a proxy that sends it in X-Proxy-Secret may forward the visitor's address. */
  proxySecret?: string
  /** The site's server-side ingest key, minted by POST /sites/{id}/ingest-key. */
  ingestKeyId?: string
  /** Signs the alert webhook's deliveries; shown once when issued (lib/sites/alerts.ts), never in reads. */
  webhookSecret?: string
  /** The secret link to the shared dashboard (lib/sites/share-link.ts): only its SHA-256, never in reads. */
  shareLink?: { hash: string; createdAt: string }
  tracking: GroupValues<'tracking'> & { customDomain: string | null }
  changeDetection: GroupValues<'changeDetection'> & CrawlState
  sharing: GroupValues<'sharing'>
  appearance: GroupValues<'appearance'>
  integrations: { ga4: Ga4Integration; searchConsole: SearchConsoleIntegration }
  alerts: {
    weeklyReport: boolean
    monthlyReport: boolean
    spikeAlerts: boolean
    dropAlerts: boolean
    spikeThreshold: number
    dropThreshold: number
    backlinkAlerts: boolean
    vitalsAlerts: boolean
    recipients: string[]
    webhookUrl: string | null
    source: Source | null
  }
  install: { installed: boolean; firstEventAt: string | null; lastEventAt: string | null; checkedAt: string | null }
  /** The days each product's imported aggregates cover (GA4's import, a Plausible export). */
  imports: { source: Source | 'plausible'; from: string; to: string; importedAt: string }[]
}

/** Whether a site holds imported aggregates that include.imports adds: a bound GA4 property, or an imported Plausible export. */
export const hasImportedData = (site: Pick<Site, 'sources' | 'imports'>) =>
  site.sources.includes('ga4') || site.imports.some((p) => p.source === 'plausible')

/** The site's GA4 integration as its record keeps it (lib/integrations/ga4/connection.ts writes it); older records lack the optional fields. */
export interface Ga4Integration {
  connected: boolean
  propertyId: string | null
  status?: 'not_connected' | 'connected' | 'needs_reconnect'
  reason?: string | null
  lastImport?: {
    state: 'queued' | 'running' | 'done' | 'failed'
    trigger: 'bind' | 'hourly' | 'daily'
    from: string | null
    to: string
    rows: number
    reason: string | null
  } | null
}

/** The site's Search Console binding as its record keeps it; the import writes where it stands (older records lack it). */
export interface SearchConsoleIntegration {
  connected: boolean
  siteUrl: string | null
  lastImport?: {
    state: 'queued' | 'running' | 'waiting' | 'done' | 'failed'
    from: string
    to: string
    daysDone: number
    daysTotal: number
    rows: number
    retryAt: string | null
    error: string | null
  } | null
}

export const siteCreateSchema = z.strictObject({
  domain: domainSchema,
  sources: sourcesSchema.optional(),
  primarySource: z.enum(SOURCES).optional(),
  timezone: timezoneSchema.optional(),
})

const flatWritable = { ...writable.tracking, ...writable.changeDetection, ...writable.sharing, ...writable.appearance }

/** Who may open a site's shared dashboard (/share/{site id}) signed out: members only, whoever holds its secret link, or anyone. */
export const SHARE_ACCESS = ['private', 'link', 'public'] as const
export type ShareAccess = (typeof SHARE_ACCESS)[number]

const shareAccessSchema = z
  .enum(SHARE_ACCESS)
  .describe(
    'Who opens the shared dashboard signed out: private (nobody; ends its secret link, so a later link is a new one), link (whoever has the secret link) or public (anyone)',
  )

export const sitePatchSchema = z
  .strictObject({
    ...flatWritable,
    access: shareAccessSchema,
    standaloneEnabled: z.boolean(),
    primarySource: z.enum(SOURCES),
    sources: sourcesSchema,
    timezone: timezoneSchema,
    customDomain: domainSchema.nullable(),
  })
  .partial()
  .refine((patch) => Object.keys(patch).length > 0, 'body must name at least one field to change')

export type SitePatch = z.infer<typeof sitePatchSchema>

export const SNIPPET_ID_PATTERN = /^[a-z0-9]{10}$/
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function checkPrimarySource(sources: Source[], primary: Source): Source {
  if (!sources.includes(primary))
    throw new ApiError(400, `primarySource: "${primary}" is not one of the site's sources (${sources.join(', ')})`)
  return primary
}

export function newSite(input: z.infer<typeof siteCreateSchema>, orgId: string, now: Date): Site {
  const sources = input.sources ?? (input.primarySource ? [input.primarySource] : ['standalone'])
  const primarySource = checkPrimarySource(sources, input.primarySource ?? sources[0])
  return {
    id: crypto.randomUUID(),
    snippetId: randomString(10, 'abcdefghijklmnopqrstuvwxyz0123456789'),
    orgId,
    domain: input.domain,
    timezone: input.timezone ?? 'UTC',
    sources,
    primarySource,
    standaloneEnabled: sources.includes('standalone'),
    createdAt: now.toISOString(),
    tracking: { ...defaults.tracking, customDomain: null },
    changeDetection: { ...defaults.changeDetection, crawlStatus: 'pending', lastCrawlAt: null, pagesKnown: 0, crawlErrors: [] },
    sharing: { ...defaults.sharing },
    appearance: { ...defaults.appearance },
    integrations: { ga4: { connected: false, propertyId: null }, searchConsole: { connected: false, siteUrl: null } },
    alerts: {
      weeklyReport: false,
      monthlyReport: false,
      spikeAlerts: false,
      dropAlerts: false,
      spikeThreshold: 2,
      dropThreshold: 0.5,
      backlinkAlerts: false,
      vitalsAlerts: false,
      recipients: [],
      webhookUrl: null,
      source: null,
    },
    install: { installed: false, firstEventAt: null, lastEventAt: null, checkedAt: null },
    imports: [],
  }
}

/**
 * The one sharing state of a site. A record saved with isPublic beside shareLevel none (before the
 * two fields were one state) shares nothing, as none says: which of the two its owner set last is
 * not known, and reading it closed publishes nothing they did not mean to.
 */
export function shareAccess(sharing: Pick<Site['sharing'], 'shareLevel' | 'isPublic'>): ShareAccess {
  if (sharing.shareLevel === 'none') return 'private'
  return sharing.isPublic ? 'public' : 'link'
}

/**
 * The sharing a patch asks for. Each field names a span of the states, ordered from closed to
 * open: access one state; shareLevel none private, link or full either open one; isPublic true
 * public, false either closed one. The site moves to the state of the span nearest its own, so
 * an older client's `shareLevel: link` opens a private site to its link, and `isPublic: false`
 * takes a public one back to its link, as they always did. Fields whose spans do not meet name
 * two states: refused, naming them.
 */
function patchedSharing(site: Site, patch: SitePatch): Pick<Site['sharing'], 'shareLevel' | 'isPublic'> {
  const spans: [string, number, number][] = []
  if (patch.access !== undefined) {
    const at = SHARE_ACCESS.indexOf(patch.access)
    spans.push([`access ${patch.access}`, at, at])
  }
  if (patch.shareLevel !== undefined)
    spans.push(patch.shareLevel === 'none' ? ['shareLevel none is private', 0, 0] : [`shareLevel ${patch.shareLevel} shares it`, 1, 2])
  if (patch.isPublic !== undefined) spans.push(patch.isPublic ? ['isPublic true is public', 2, 2] : ['isPublic false is not public', 0, 1])
  const low = Math.max(0, ...spans.map((s) => s[1]))
  const high = Math.min(2, ...spans.map((s) => s[2]))
  if (low > high) {
    const fields = (['access', 'shareLevel', 'isPublic'] as const).filter((f) => patch[f] !== undefined)
    throw new ApiError(
      400,
      `${fields.join(', ')}: they name different sharing states (${spans.map((s) => s[0]).join('; ')}); send access alone: private, link or public`,
    )
  }
  const access = SHARE_ACCESS[Math.min(high, Math.max(low, SHARE_ACCESS.indexOf(shareAccess(site.sharing))))]
  if (access === 'private') return { shareLevel: 'none', isPublic: false }
  const shows = patch.shareLevel ?? site.sharing.shareLevel
  return { shareLevel: shows === 'none' ? 'link' : shows, isPublic: access === 'public' }
}

/** Applies a validated flat patch; a 400 naming the field when the result would be inconsistent. */
export function applySitePatch(site: Site, patch: SitePatch): Site {
  const next: Site = structuredClone(site)
  for (const group of Object.keys(writable) as Group[]) {
    for (const field of Object.keys(writable[group])) {
      if (field in patch) (next[group] as Record<string, unknown>)[field] = (patch as Record<string, unknown>)[field]
    }
  }
  Object.assign(next.sharing, patchedSharing(site, patch))
  // a private site holds no link: one made before it closed never opens it again, nor do its cookies
  if (shareAccess(site.sharing) === 'private' || shareAccess(next.sharing) === 'private') delete next.shareLink
  if (patch.timezone !== undefined) next.timezone = patch.timezone
  if (patch.sources !== undefined) next.sources = patch.sources
  if (patch.primarySource !== undefined) next.primarySource = patch.primarySource
  if (patch.standaloneEnabled !== undefined) next.standaloneEnabled = patch.standaloneEnabled
  if (patch.standaloneEnabled === true && !next.sources.includes('standalone')) next.sources = [...next.sources, 'standalone']
  checkPrimarySource(next.sources, next.primarySource)
  return next
}

/** The site as the API shows it. */
export function siteView(site: Site, baseUrl: string) {
  const { orgId: _org, proxySecret: _secret, ingestKeyId: _ingest, webhookSecret: _webhook, shareLink: _link, ...rest } = site
  const scriptHost = site.tracking.customDomain ? `https://${site.tracking.customDomain}` : baseUrl
  return {
    ...rest,
    // sites saved before a tracking setting existed read its default
    tracking: { ...defaults.tracking, ...site.tracking },
    changeDetection: { lastCrawlAt: null, pagesKnown: 0, crawlErrors: [], ...site.changeDetection },
    // reads pass the install state read from the events (withInstallState); a new site has none
    install: { recording: false, ...site.install },
    sharing: sharingView(site),
    integrations: {
      ...site.integrations,
      ga4: {
        status: site.integrations.ga4.connected ? ('connected' as const) : ('not_connected' as const),
        reason: null,
        lastImport: null,
        ...site.integrations.ga4,
      },
      searchConsole: { lastImport: null, ...site.integrations.searchConsole },
    },
    snippet: `<script defer data-site="${site.snippetId}" src="${scriptHost}/js/script.js"></script>`,
  }
}

/** The sharing settings as reads show them: the state, and the older fields consistent with it. */
function sharingView(site: Site) {
  const access = shareAccess(site.sharing)
  return {
    ...site.sharing,
    access,
    isPublic: access === 'public',
    linkCreatedAt: (access === 'private' ? undefined : site.shareLink?.createdAt) ?? null,
  }
}

const groupSchema = <G extends Group>(group: G) => z.object(writable[group] as (typeof writable)[G])

/** The answer of every site read and write: the site as siteView shows it. */
export const siteViewSchema = z.object({
  id: z.uuid(),
  snippetId: z.string().describe('The public data-site value; works as site_id too'),
  domain: z.string(),
  timezone: z.string(),
  sources: z.array(z.enum(SOURCES)),
  primarySource: z.enum(SOURCES),
  standaloneEnabled: z.boolean(),
  createdAt: z.string(),
  tracking: groupSchema('tracking').extend({ customDomain: z.string().nullable() }),
  changeDetection: groupSchema('changeDetection').extend({
    crawlStatus: z
      .enum(['pending', 'ok', 'failed'])
      .describe('pending until the first crawl; failed when the last run could not crawl the site'),
    lastCrawlAt: z.string().nullable().describe('The last crawl run, ISO 8601 UTC'),
    pagesKnown: z.number().int().nonnegative().describe('Pages the crawler has a snapshot of'),
    crawlErrors: z
      .array(z.object({ path: z.string(), error: z.string() }))
      .describe("Pages the last run could not fetch, at most 20; path '' is the run itself failing"),
  }),
  sharing: groupSchema('sharing').extend({
    access: shareAccessSchema,
    linkCreatedAt: z
      .string()
      .nullable()
      .describe('When the secret link to the shared dashboard was made (POST /sites/{site_id}/share-link); null for none'),
  }),
  appearance: groupSchema('appearance'),
  integrations: z.object({
    ga4: z.object({
      connected: z.boolean().describe('A working Google connection: false when not connected or when it needs connecting again'),
      propertyId: z.string().nullable().describe('The bound GA4 property'),
      status: z.enum(['not_connected', 'connected', 'needs_reconnect']),
      reason: z.string().nullable().describe('Why the connection needs connecting again'),
      lastImport: z
        .object({
          state: z.enum(['queued', 'running', 'done', 'failed']),
          trigger: z.enum(['bind', 'hourly', 'daily']),
          from: z.string().nullable(),
          to: z.string(),
          rows: z.number().int(),
          reason: z.string().nullable(),
        })
        .nullable()
        .describe('The latest GA4 import run (GET /sites/{site_id}/imports lists them all)'),
    }),
    searchConsole: z.object({
      connected: z.boolean().describe('A Search Console property is bound'),
      siteUrl: z.string().nullable().describe('The bound property'),
      lastImport: z
        .object({
          state: z.enum(['queued', 'running', 'waiting', 'done', 'failed']),
          from: z.string(),
          to: z.string(),
          daysDone: z.number().int(),
          daysTotal: z.number().int(),
          rows: z.number().int(),
          retryAt: z.string().nullable(),
          error: z.string().nullable(),
        })
        .nullable()
        .describe('Where its import stands (GET /sites/{site_id}/search-console has the connection, /imports the runs)'),
    }),
  }),
  alerts: z.object({
    weeklyReport: z.boolean(),
    monthlyReport: z.boolean(),
    spikeAlerts: z.boolean(),
    dropAlerts: z.boolean(),
    spikeThreshold: z.number(),
    dropThreshold: z.number(),
    backlinkAlerts: z.boolean(),
    vitalsAlerts: z.boolean(),
    recipients: z.array(z.string()),
    webhookUrl: z.string().nullable(),
    source: z.enum(SOURCES).nullable(),
  }),
  install: z.object({
    installed: z.boolean().describe('An event was ever received, or an install check found the tag'),
    recording: z.boolean().describe('Events were received in the last 24 hours'),
    firstEventAt: z.string().nullable(),
    lastEventAt: z.string().nullable(),
    checkedAt: z.string().nullable().describe('The last install check'),
  }),
  imports: z.array(z.object({ source: z.enum([...SOURCES, 'plausible']), from: z.string(), to: z.string(), importedAt: z.string() })),
  snippet: z.string().describe('The tracking snippet to paste'),
})
