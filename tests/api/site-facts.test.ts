import { beforeAll, describe, expect, it } from 'vitest'
import { PLANS } from '../../lib/accounts/plans'
import { collectLines, harness, REDIS_URL, type Harness } from '../helpers'

const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

describe.each(kinds)('site facts (%s key/value store)', (kind) => {
  let t: Harness
  const now = new Date('2026-11-22T12:00:00Z')

  beforeAll(async () => {
    // the hosted service's plans, read from each organization (a self-hosted deployment is unlimited)
    t = await harness({ kv: kind, now: () => now, with: { plan: undefined } })
    const hit = (at: string, name: string) =>
      JSON.stringify({
        timestamp: at,
        site: t.a.site.snippetId,
        name,
        url: `https://${t.a.site.domain}/`,
        ip: '8.8.8.8',
        userAgent: FIREFOX,
      })
    // collected live: this month's events count them
    await collectLines(
      [
        hit('2026-10-30T10:00:00Z', 'pageview'),
        hit('2026-11-20T10:00:00Z', 'pageview'),
        hit('2026-11-20T10:01:00Z', 'Download'),
        hit('2026-11-21T10:00:00Z', 'pageview'),
      ],
      t.services.ingestor,
    )
  })

  it("answers the site's facts, install state, this month's events and the billing state", async () => {
    for (const ref of [t.a.site.id, t.a.site.snippetId]) {
      const res = await t.call('GET', `/api/v1/site?site_id=${ref}`, { key: t.a.read.key })
      expect(res.status).toBe(200)
      expect(res.json).toEqual({
        id: t.a.site.id,
        snippetId: t.a.site.snippetId,
        domain: t.a.site.domain,
        timezone: 'Europe/Berlin',
        sources: ['standalone'],
        primarySource: 'standalone',
        createdAt: now.toISOString(),
        install: {
          installed: true,
          // the last event is 26 hours old: installed, not recording
          recording: false,
          firstEventAt: '2026-10-30T10:00:00.000Z',
          lastEventAt: '2026-11-21T10:00:00.000Z',
          checkedAt: null,
        },
        eventsThisMonth: { month: '2026-11', events: 3, byKind: { pageview: 2, custom: 1 } },
        billing: {
          plan: 'free',
          subscription: { status: 'free', trialEndsAt: null, trialDaysLeft: null },
          billingPeriod: { month: '2026-11', from: '2026-11-01T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z' },
          organizationEvents: 3,
          quota: PLANS.free.limits.monthlyEvents!,
        },
        notices: [],
      })
    }
    // a site without events is not installed
    const fresh = await t.call('GET', `/api/v1/site?site_id=${t.b.site.id}`, { key: t.b.read.key })
    expect(fresh.json).toMatchObject({
      install: { installed: false, firstEventAt: null, lastEventAt: null },
      eventsThisMonth: { events: 0, byKind: {} },
    })
  })

  it('carries the quota notice of the organization', async () => {
    await t.repositories.usage.add(t.a.org.id, '2026-11', { [crypto.randomUUID()]: { pageview: PLANS.free.limits.monthlyEvents! * 0.9 } })
    const near = (await t.call('GET', `/api/v1/site?site_id=${t.a.site.id}`, { key: t.a.read.key })).json
    expect(near.notices).toEqual([{ level: 'info', code: 'quota_near', message: expect.stringContaining('%') }])
    // the site's own count is its own
    expect(near.eventsThisMonth.events).toBe(3)
    await t.repositories.usage.add(t.a.org.id, '2026-11', { [crypto.randomUUID()]: { custom: PLANS.free.limits.monthlyEvents! } })
    const over = (await t.call('GET', `/api/v1/site?site_id=${t.a.site.id}`, { key: t.a.read.key })).json
    expect(over.notices.map((n: { code: string }) => n.code)).toEqual(['quota_exceeded'])
  })

  it("another organization's site is the same 404 as an unknown one; a site-bound key reaches its own site only", async () => {
    const unknown = await t.call('GET', `/api/v1/site?site_id=${crypto.randomUUID()}`, { key: t.a.read.key })
    expect(unknown.status).toBe(404)
    for (const ref of [t.b.site.id, t.b.site.snippetId])
      expect(await t.call('GET', `/api/v1/site?site_id=${ref}`, { key: t.a.read.key })).toMatchObject({ status: 404, json: unknown.json })
    expect((await t.call('GET', `/api/v1/site?site_id=${t.a.site.id}`, { key: t.ingest.key })).status).toBe(200)
    const other = (
      await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: `o-${crypto.randomUUID().slice(0, 6)}.example.com` } })
    ).json
    expect((await t.call('GET', `/api/v1/site?site_id=${other.id}`, { key: t.ingest.key })).status).toBe(404)
    expect((await t.call('GET', '/api/v1/site', { key: t.a.read.key })).json.error).toMatch(/^site_id/)
  })
})
