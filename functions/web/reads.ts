import type { ApiKeyRecord } from '../../lib/accounts/keys'
import { ApiError } from '../../lib/core/errors'
import type { Services } from '../../lib/runtime/services'
import type { Site } from '../../lib/sites/sites'
import type { Endpoint } from '../endpoint'
import { CallContext, invoke } from '../invoke'
import { endpoints } from '../registry'

const reads = new Map<string, Endpoint>(endpoints.filter((e) => e.method === 'GET').map((e) => [e.path, e]))

/**
 * The API's read verbs as the web application calls them for one site: the endpoint of the
 * registry with that path, its parameters checked as a REST call's are, and a read-only caller
 * bound to the site (the signed-in member's or the shared link's view reaches that one site only).
 * A page therefore shows exactly what `GET /api/v1/...` answers for the same parameters. A shared
 * view's reads are anonymous: they store no rollup of their filters (Services.anonymousReads).
 */
export function siteReader(services: Services, { site, shared }: { site: Site; shared: boolean }, request: Request, env?: unknown) {
  const key: ApiKeyRecord = {
    id: `web:${site.id}`,
    orgId: site.orgId,
    name: 'web application',
    prefix: '',
    scope: 'read',
    siteId: site.id,
    createdAt: site.createdAt,
  }
  const ctx = new CallContext(shared ? { ...services, anonymousReads: true } : services, key, request, env)
  // biome-ignore lint/suspicious/noExplicitAny: the answer's shape is the endpoint's declared schema, read by each page
  return async <T = any>(path: string, params: Record<string, string | undefined> = {}): Promise<T> => {
    const endpoint = reads.get(path)
    if (!endpoint) throw new Error(`no read ${path} in the registry`)
    const given: Record<string, string> = {}
    for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') given[name] = value
    if (endpoint.params && 'site_id' in endpoint.params.shape) given.site_id = site.id
    const answer = await invoke(endpoint, ctx, { params: given })
    if (answer instanceof Response) {
      if (!answer.ok) throw new ApiError(answer.status as 400, `${path} answered ${answer.status}`)
      return (await answer.json()) as T
    }
    return answer as T
  }
}

export type SiteReader = ReturnType<typeof siteReader>
