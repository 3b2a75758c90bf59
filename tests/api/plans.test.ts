import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { nodeEnvSchema, parseEnv } from '../../lib/runtime/env'
import { harness } from '../helpers'

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const now = new Date('2026-11-22T12:00:00Z')
const month = '2026-11'
const domain = () => `s-${crypto.randomUUID().slice(0, 8)}.example.com`

describe('plans of a deployment', () => {
  it('a self-hosted deployment is unlimited unless PLAN names a plan', () => {
    expect(parseEnv(nodeEnvSchema, {}).PLAN).toBe('unlimited')
    expect(parseEnv(nodeEnvSchema, { PLAN: 'free' }).PLAN).toBe('free')
    expect(() => parseEnv(nodeEnvSchema, { PLAN: 'gold' })).toThrow(
      /PLAN is "gold": must be unlimited, free, pro, business or per-organization/,
    )
  })

  it('unlimited: no limits, no quota, no upgrade notice, however much is used; sites and members are created freely', async () => {
    const t = await harness({ now: () => now })
    // 600,000 billable events this month: over every billed plan's quota but business
    await t.repositories.usage.add(t.a.org.id, month, { [t.a.site.id]: { pageview: 600_000 } })
    const org = (await t.call('GET', '/api/v1/org', { key: t.a.read.key })).json
    expect(org).toMatchObject({
      plan: 'unlimited',
      limits: { monthlyEvents: null, sites: null, teamMembers: null, retentionMonths: null },
      usage: { events: 600_000, quota: null, share: null },
      notices: [],
    })
    const site = (await t.call('GET', `/api/v1/site?site_id=${t.a.site.id}`, { key: t.a.read.key })).json
    expect(site.billing).toMatchObject({ plan: 'unlimited', quota: null })
    expect(site.notices).toEqual([])
    expect((await t.call('GET', '/api/v1/me', { key: t.a.read.key })).json.plan).toBe('unlimited')

    for (let i = 0; i < 4; i++) {
      expect((await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: domain() } })).status).toBe(201)
    }
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) {
      expect((await t.call('POST', '/api/v1/org/members', { key: t.a.write.key, body: { email, role: 'member' } })).status).toBe(201)
    }
  })

  it('a plan with limits: the site and the member past them are a 403 naming the limit; collection goes on past the quota', async () => {
    const t = await harness({ now: () => now, with: { plan: 'free' } })
    // the free plan: 3 sites (the org has 1), 1 team member (the owner)
    expect((await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: domain() } })).status).toBe(201)
    expect((await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: domain() } })).status).toBe(201)
    const fourth = await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: domain() } })
    expect(fourth.status).toBe(403)
    expect(fourth.json.error).toBe('the free plan allows 3 sites (limits.sites); this organization has 3')
    expect((await t.call('GET', '/api/v1/sites', { key: t.a.read.key })).json.sites).toHaveLength(3)

    const invited = await t.call('POST', '/api/v1/org/members', { key: t.a.write.key, body: { email: 'x@example.com', role: 'member' } })
    expect(invited.status).toBe(403)
    expect(invited.json.error).toMatch(/^the free plan allows 1 team member, open invitations included \(limits.teamMembers\)/)
    expect((await t.call('GET', '/api/v1/org/members', { key: t.a.read.key })).json.invitations).toEqual([])

    // over the monthly events: a notice, and the next hit is stored all the same
    await t.repositories.usage.add(t.a.org.id, month, { [t.a.site.id]: { pageview: 100_001 } })
    const org = (await t.call('GET', '/api/v1/org', { key: t.a.read.key })).json
    expect(org.notices.map((n: { code: string }) => n.code)).toContain('quota_exceeded')
    const hit = await createApp(t.services).request('http://api.test/api/event', {
      method: 'POST',
      headers: { 'user-agent': CHROME, 'x-forwarded-for': '8.8.8.8' },
      body: JSON.stringify({ site: t.a.site.snippetId, name: 'pageview', url: `https://${t.a.site.domain}/over-quota` }),
    })
    expect(hit.status).toBe(202)
    expect(hit.headers.get('x-dropped')).toBeNull()
    const [row] = await t.clickhouse.query<{ n: string }>(
      'SELECT count() AS n FROM events WHERE site_id = {s:UUID} AND pathname = {p:String}',
      {
        s: t.a.site.id,
        p: '/over-quota',
      },
    )
    expect(row.n).toBe('1')
  })

  it("per organization: each organization's own plan, as the hosted service bills it", async () => {
    const t = await harness({ now: () => now, with: { plan: undefined } })
    const org = (await t.repositories.orgs.get(t.b.org.id))!
    await t.repositories.orgs.create({ ...org, plan: 'pro' })
    expect((await t.call('GET', '/api/v1/org', { key: t.b.read.key })).json).toMatchObject({ plan: 'pro', limits: { teamMembers: 10 } })
    expect(
      (await t.call('POST', '/api/v1/org/members', { key: t.b.write.key, body: { email: 'y@example.com', role: 'member' } })).status,
    ).toBe(201)
    // org A is on the free plan: its one member is its owner
    expect((await t.call('GET', '/api/v1/org', { key: t.a.read.key })).json.plan).toBe('free')
    expect(
      (await t.call('POST', '/api/v1/org/members', { key: t.a.write.key, body: { email: 'z@example.com', role: 'member' } })).status,
    ).toBe(403)
  })
})
