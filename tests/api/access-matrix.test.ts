import { beforeAll, describe, expect, it } from 'vitest'
import { endpoints } from '../../functions/registry'
import { createApiKey } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { acceptInvitation, addOwner } from '../../lib/accounts/members'
import { memoryRateLimiter } from '../../lib/accounts/ratelimit'
import { harness, type Harness } from '../helpers'

/**
 * Generated from the registry: every keyed endpoint, called with each kind of key of one
 * organization (read, write, site-bound ingest) against the other organization's resources
 * (its site by UUID and by snippet id, its goal, its key). Nothing of the other organization may
 * be read or changed: no success against a foreign id, none of its ids in any answer, and its
 * site, goals and keys exactly as before.
 */

const unlimited = {
  default: { max: 1e9, windowMs: 60_000 },
  collect: { max: 1e9, windowMs: 60_000 },
  ping: { max: 1e9, windowMs: 60_000 },
  proxy: { max: 1e9, windowMs: 60_000 },
}
const GPTBOT = 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)'

describe('access matrix: one organization against another', () => {
  let t: Harness
  let foreignGoal = ''
  let foreignKeyId = ''
  let foreignMember = ''
  let foreignInvitation = ''
  let foreignFunnel = ''
  let foreignSegment = ''
  let foreignAnnotation = ''
  let secrets: string[] = []

  beforeAll(async () => {
    t = await harness({ limiter: memoryRateLimiter(Date.now, unlimited) })
    const goal = await t.call('POST', '/api/v1/goals', {
      key: t.b.write.key,
      body: { site_id: t.b.site.id, type: 'event', matchValue: 'Signup' },
    })
    foreignGoal = goal.json.id
    const asB = (path: string, body: unknown) => t.call('POST', path, { key: t.b.write.key, body })
    foreignFunnel = (
      await asB('/api/v1/funnels', {
        site_id: t.b.site.id,
        name: 'Theirs',
        steps: [
          { type: 'page', value: '/' },
          { type: 'goal', value: foreignGoal },
        ],
      })
    ).json.id
    foreignSegment = (
      await asB('/api/v1/segments', {
        site_id: t.b.site.id,
        name: 'Theirs',
        filters: [{ dimension: 'path', operator: 'is', value: ['/secret-page'] }],
      })
    ).json.id
    foreignAnnotation = (await asB('/api/v1/annotations', { siteId: t.b.site.id, title: 'Their launch' })).json.id
    foreignKeyId = (
      await createApiKey(t.repositories, { orgId: t.b.org.id, name: 'b-ingest', scope: 'write', siteId: t.b.site.id }, t.services.now())
    ).id
    await t.call('GET', `/api/v1/proxy-config?site_id=${t.b.site.id}`, { key: t.b.write.key })
    const hit = {
      timestamp: new Date(Date.now() - 600_000).toISOString(),
      site: t.b.site.snippetId,
      name: 'pageview',
      url: `https://${t.b.site.domain}/secret-page`,
      ip: '203.0.113.1',
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
    }
    await importHits([JSON.stringify(hit)], t.services.ingestor)
    // org B's team: an owner, an admin and a pending invitation
    await addOwner(t.repositories, t.b.org.id, 'owner-b@example.org', t.services.now())
    const invited = await t.call('POST', '/api/v1/org/members', {
      key: t.b.write.key,
      body: { email: 'admin-b@example.org', role: 'admin' },
    })
    foreignMember = (await acceptInvitation(t.repositories, invited.json.id, t.services.now())).id
    foreignInvitation = (
      await t.call('POST', '/api/v1/org/members', { key: t.b.write.key, body: { email: 'pending-b@example.org', role: 'member' } })
    ).json.id
    secrets = [
      t.b.org.id,
      t.b.site.id,
      t.b.site.snippetId,
      t.b.site.domain,
      foreignGoal,
      foreignKeyId,
      t.b.read.id,
      t.b.write.id,
      '/secret-page',
      foreignFunnel,
      foreignSegment,
      foreignAnnotation,
      'Their launch',
      foreignMember,
      foreignInvitation,
      'owner-b@',
      'admin-b@',
      'pending-b@',
    ]
  })

  const stateOfB = async () => ({
    site: await t.repositories.sites.get(t.b.site.id),
    goals: await t.repositories.goals.list(t.b.site.id),
    keys: (await t.repositories.keys.list(t.b.org.id)).map(({ lastUsedAt: _, ...k }) => k),
    team: await t.repositories.team.list(t.b.org.id),
    funnels: await t.repositories.funnels.list(t.b.site.id),
    segments: await t.repositories.segments.list(t.b.site.id),
    annotations: await t.repositories.annotations.list(t.b.site.id),
    imports: await t.repositories.importRuns.list(t.b.site.id),
  })

  it('leaks nothing through any keyed endpoint, with any key kind, by UUID or snippet id', async () => {
    const before = await stateOfB()
    const keys = { read: t.a.read.key, write: t.a.write.key, ingest: t.ingest.key }
    let calls = 0
    const statuses = new Set<number>()
    for (const endpoint of endpoints.filter((e) => e.scope !== 'public')) {
      for (const [kind, key] of Object.entries(keys)) {
        // the other organization's site, and (so its ids are looked up, not stopped at the site) our own
        for (const siteRef of [t.b.site.id, t.b.site.snippetId, t.a.site.id]) {
          const ownSite = siteRef === t.a.site.id
          const foreignId = endpoint.path.includes('annotations')
            ? foreignAnnotation
            : endpoint.path.includes('segments')
              ? foreignSegment
              : foreignKeyId
          const sample: Record<string, unknown> = {
            site_id: siteRef,
            siteId: siteRef,
            goal_id: foreignGoal,
            funnel_id: foreignFunnel,
            id: foreignId,
            confirm: t.b.site.domain,
            property: 'path',
            range: '30d',
            domain: `x-${crypto.randomUUID().slice(0, 6)}.example.com`,
            name: 'mine now',
            type: 'event',
            matchValue: 'x',
            title: 'mine now',
            steps: [
              { type: 'page', value: '/' },
              { type: 'goal', value: foreignGoal },
            ],
            filters: [{ dimension: 'path', operator: 'is', value: ['/'] }],
            includeBots: true,
            publicCounts: true,
            events: [{ path: '/', userAgent: GPTBOT }],
            member_id: foreignMember,
            invitation_id: foreignInvitation,
            role: 'admin',
            email: `x-${crypto.randomUUID().slice(0, 6)}@example.com`,
            weeklyReport: true,
          }
          const paramNames = Object.keys(endpoint.params?.shape ?? {})
          const bodyNames = Object.keys((endpoint.body as unknown as { shape?: Record<string, unknown> })?.shape ?? {})
          let path = endpoint.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(sample[name])))
          const query = new URLSearchParams(
            paramNames.filter((n) => !endpoint.path.includes(`{${n}}`) && n in sample).map((n) => [n, String(sample[n])]),
          )
          if (query.size) path += `?${query}`
          const body = endpoint.body ? Object.fromEntries(bodyNames.filter((n) => n in sample).map((n) => [n, sample[n]])) : undefined
          const res = await t.call(endpoint.method, path, { key, body })
          calls++
          const where = `${kind} key: ${endpoint.method} ${path} -> ${res.status} ${JSON.stringify(res.json).slice(0, 200)}`
          const text = JSON.stringify(res.json)
          for (const secret of secrets) expect(text.includes(secret), `${where} shows ${secret}`).toBe(false)
          // an endpoint that names a foreign resource never succeeds with it
          const foreignNames = ownSite
            ? ['goal_id', 'funnel_id', 'id', 'member_id', 'invitation_id']
            : ['site_id', 'siteId', 'goal_id', 'funnel_id', 'id', 'member_id', 'invitation_id']
          const namesForeign = [...paramNames, ...bodyNames].some((n) => foreignNames.includes(n))
          if (namesForeign) expect(res.status, where).toBeGreaterThanOrEqual(400)
          statuses.add(res.status)
        }
      }
    }
    expect(await stateOfB()).toEqual(before)
    console.log(`access matrix: ${calls} cross-organization calls`)
    expect(calls).toBeGreaterThan(100)
    // the calls reached the access checks: foreign sites were not found, org-wide endpoints refused site-bound keys
    expect([...statuses]).toEqual(expect.arrayContaining([200, 403, 404]))
  })
})
