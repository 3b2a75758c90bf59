import { z } from 'zod'
import { type LinkType, linkType, linkUrl } from './links'

/**
 * Backlink data providers: the links our own discovery cannot see (no traffic came through them)
 * and the provider's authority of the site and of each referring domain. One small interface, so
 * another provider is one more adapter; the one here is DataForSEO's Backlinks API
 * (docs/backlinks.md says why), reached only through the guarded fetch.
 */

export interface ProviderLink {
  sourceUrl: string
  targetUrl: string
  anchor: string
  rel: LinkType
  image: boolean
  title: string
  /** The referring domain's authority on the provider's scale, when it gives one. */
  domainAuthority: number | null
  /** When the provider first saw the link (epoch ms), when it says. */
  firstSeen: number | null
}

export interface ProviderAnswer {
  /** The site's own authority on the provider's scale. */
  authority: number | null
  links: ProviderLink[]
}

export interface BacklinkProvider {
  /** Named in answers (`authority.provider`). */
  name: string
  /** The live links to `domain` (its subdomains included), at most `cap`, and its authority. */
  fetch(domain: string, cap: number): Promise<ProviderAnswer>
}

export const DEFAULT_DATAFORSEO_URL = 'https://api.dataforseo.com'
/** Links asked for per request (the API's largest page). */
const PAGE = 1000
/** A provider call that takes longer is abandoned; the next day's run asks again. */
export const PROVIDER_TIMEOUT_MS = 60_000
/** The largest provider answer read (a page of 1,000 links is a few megabytes). */
export const PROVIDER_MAX_BYTES = 32 * 1024 * 1024

export class ProviderError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ProviderError'
  }
}

/** DataForSEO's answer envelope: a list of tasks, each with its own status and results. */
const envelope = <T extends z.ZodType>(result: T) =>
  z.object({
    status_code: z.number(),
    status_message: z.string().optional(),
    tasks: z
      .array(
        z.object({
          status_code: z.number(),
          status_message: z.string().optional(),
          result: z.array(result).nullable().optional(),
        }),
      )
      .nullable()
      .optional(),
  })

const backlinkItem = z.object({
  url_from: z.string(),
  url_to: z.string(),
  anchor: z.string().nullable().optional(),
  dofollow: z.boolean().nullable().optional(),
  attributes: z.array(z.string()).nullable().optional(),
  item_type: z.string().nullable().optional(),
  page_from_title: z.string().nullable().optional(),
  first_seen: z.string().nullable().optional(),
  domain_from_rank: z.number().nullable().optional(),
})
const backlinksAnswer = envelope(
  z.object({ total_count: z.number().nullable().optional(), items: z.array(backlinkItem).nullable().optional() }),
)
const summaryAnswer = envelope(z.object({ rank: z.number().nullable().optional() }))

/** "2021-01-20 05:45:43 +00:00" as epoch ms, or null. */
function providerTime(text: string | null | undefined): number | null {
  if (!text) return null
  const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) ([+-]\d\d):?(\d\d)$/.exec(text.trim())
  const ms = m ? Date.parse(`${m[1]}T${m[2]}${m[3]}:${m[4]}`) : Date.parse(text)
  return Number.isFinite(ms) ? ms : null
}

/**
 * DataForSEO Backlinks API: `POST /v3/backlinks/backlinks/live` (paged by offset) and
 * `POST /v3/backlinks/summary/live` (the site's rank, 0 to 1000), HTTP Basic with the API login
 * and password. `credentials` is `login:password`.
 */
export function dataForSeo(options: { credentials: string; baseUrl: string; fetch: typeof fetch }): BacklinkProvider {
  const authorization = `Basic ${btoa(options.credentials)}`
  const post = async <T extends z.ZodType>(path: string, task: object, schema: T): Promise<z.infer<T>> => {
    let res: Response
    try {
      res = await options.fetch(`${options.baseUrl}${path}`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify([task]),
      })
    } catch (err) {
      throw new ProviderError(`DataForSEO ${path}: ${(err as Error).message}`)
    }
    if (!res.ok) throw new ProviderError(`DataForSEO ${path} answered ${res.status}`)
    const parsed = schema.safeParse(await res.json().catch(() => null))
    if (!parsed.success) throw new ProviderError(`DataForSEO ${path}: an answer not in the documented shape`)
    const answer = parsed.data as z.infer<ReturnType<typeof envelope>>
    const first = answer.tasks?.[0]
    // 20000 is "Ok." for the request and for each task
    if (answer.status_code !== 20000)
      throw new ProviderError(`DataForSEO ${path}: ${answer.status_code} ${answer.status_message ?? ''}`.trim())
    if (first?.status_code !== 20000)
      throw new ProviderError(`DataForSEO ${path}: task ${first?.status_code ?? 'missing'} ${first?.status_message ?? ''}`.trim())
    return parsed.data
  }
  return {
    name: 'dataforseo',
    async fetch(domain, cap) {
      const summary = await post('/v3/backlinks/summary/live', { target: domain, include_subdomains: true }, summaryAnswer)
      const authority = summary.tasks?.[0]?.result?.[0]?.rank ?? null
      const links: ProviderLink[] = []
      for (let offset = 0; offset < cap; offset += PAGE) {
        const answer = await post(
          '/v3/backlinks/backlinks/live',
          {
            target: domain,
            mode: 'as_is',
            backlinks_status_type: 'live',
            include_subdomains: true,
            limit: Math.min(PAGE, cap - offset),
            offset,
          },
          backlinksAnswer,
        )
        const result = answer.tasks?.[0]?.result?.[0]
        const items = result?.items ?? []
        for (const item of items) {
          const sourceUrl = linkUrl(item.url_from)
          const targetUrl = linkUrl(item.url_to)
          if (!sourceUrl || !targetUrl) continue
          const attributes = (item.attributes ?? []).join(' ')
          links.push({
            sourceUrl,
            targetUrl,
            anchor: (item.anchor ?? '').replace(/\s+/g, ' ').trim().slice(0, 500),
            rel: item.dofollow === false && !attributes ? 'nofollow' : linkType(attributes),
            image: item.item_type === 'image',
            title: (item.page_from_title ?? '').slice(0, 500),
            domainAuthority: item.domain_from_rank ?? null,
            firstSeen: providerTime(item.first_seen),
          })
        }
        if (items.length < PAGE || offset + items.length >= (result?.total_count ?? 0)) break
      }
      return { authority, links }
    },
  }
}

export interface ProviderSettings {
  BACKLINKS_API_KEY?: string
  BACKLINKS_API_URL?: string
}

/**
 * The home's provider: DataForSEO when BACKLINKS_API_KEY is set, else none (authority is then not
 * available). `guarded` builds the home's guarded fetch with the provider's timeout and size cap.
 */
export function backlinkProvider(
  env: ProviderSettings,
  guarded: (limits: { timeoutMs: number; maxBytes: number }) => typeof fetch,
): BacklinkProvider | undefined {
  if (!env.BACKLINKS_API_KEY) return undefined
  return dataForSeo({
    credentials: env.BACKLINKS_API_KEY,
    baseUrl: (env.BACKLINKS_API_URL || DEFAULT_DATAFORSEO_URL).replace(/\/+$/, ''),
    fetch: guarded({ timeoutMs: PROVIDER_TIMEOUT_MS, maxBytes: PROVIDER_MAX_BYTES }),
  })
}
