import type { Context } from 'hono'
import type { ApiKeyRecord } from '../../lib/accounts/keys'
import { requireRole } from '../../lib/accounts/members'
import type { Member } from '../../lib/accounts/team'
import { ApiError } from '../../lib/core/errors'
import type { Services } from '../../lib/runtime/services'
import type { Site } from '../../lib/sites/sites'
import { pathParamNames } from '../endpoint'
import { CallContext, invoke } from '../invoke'
import { type Registered, endpoints } from '../registry'

type Method = Registered['method']
/** The paths the registry declares for a method. */
export type PathOf<M extends Method> = Extract<Registered, { method: M }>['path']
/** What the endpoint `method path` answers, as its declaration types it. */
export type AnswerOf<M extends Method, P extends string> = Required<Extract<Registered, { method: M; path: P }>>['answer']

/** Who calls the API from a page: a member of the site's organization, or (no member) whoever holds its shared view. */
export interface Caller {
  site: Site
  member?: Member
}

/** The roles that change settings: their calls carry a write key's rights. */
export const ADMINS: Member['role'][] = ['owner', 'admin']

const byRoute = new Map(endpoints.map((e) => [`${e.method} ${e.path}`, e]))

/**
 * The one way the web application reaches the domain: an endpoint of the registry, named by its
 * method and path, called for one site with its parameters and body checked as a REST call's are.
 * The caller's rights are the member's (a read key's for members, a write key's for owners and
 * admins; a write endpoint refuses members with 403), bound to the site; a shared view's are a read
 * key's, and its reads are anonymous: they store no rollup of their filters (Services.anonymousReads).
 * A page therefore shows exactly what `GET /api/v1/...` answers, and a form is refused as the API
 * refuses it. The answer is typed as the endpoint declares it.
 */
export function apiFor(c: Context, services: Services, { site, member }: Caller) {
  const key: ApiKeyRecord = {
    id: member ? `web:${member.id}` : `web:shared:${site.id}`,
    orgId: site.orgId,
    name: 'web application',
    prefix: '',
    scope: member && ADMINS.includes(member.role) ? 'write' : 'read',
    siteId: site.id,
    createdAt: site.createdAt,
    ...(member ? { madeBy: { memberId: member.id, email: member.email } } : {}),
  }
  const ctx = new CallContext(member ? services : { ...services, anonymousReads: true }, key, c.req.raw, c.env, c)
  return async <M extends Method, P extends PathOf<M>>(
    method: M,
    path: P,
    input: { params?: Record<string, string | undefined>; body?: unknown } = {},
  ): Promise<AnswerOf<M, P>> => {
    const endpoint = byRoute.get(`${method} ${path}`)
    if (!endpoint) throw new Error(`no endpoint ${method} ${path} in the registry`)
    if (endpoint.scope === 'write') requireRole(member ?? { role: 'member' }, ADMINS, 'change site settings')
    const params: Record<string, string> = {}
    for (const [name, value] of Object.entries(input.params ?? {})) if (value !== undefined && value !== '') params[name] = value
    if (pathParamNames(endpoint.path).includes('site_id') || (endpoint.params && 'site_id' in endpoint.params.shape))
      params.site_id = site.id
    const answer = await invoke(endpoint, ctx, { params, body: input.body })
    if (answer instanceof Response) {
      if (!answer.ok) throw new ApiError(answer.status as 400, `${path} answered ${answer.status}`)
      return (await answer.json()) as AnswerOf<M, P>
    }
    return answer as AnswerOf<M, P>
  }
}

export type Api = ReturnType<typeof apiFor>
