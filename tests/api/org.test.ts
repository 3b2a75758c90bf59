import { beforeAll, describe, expect, it } from 'vitest'
import { importHits, parseImportLine } from '../../lib/ingest/import'
import { PLANS } from '../../lib/accounts/plans'
import { harness, REDIS_URL, type Harness } from '../helpers'

const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'
const GPTBOT = 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)'

describe.each(kinds)('organization (%s key/value store)', (kind) => {
  let t: Harness
  let second = { id: '', domain: '', snippetId: '' }
  const now = new Date('2026-11-22T12:00:00Z')

  /** Hits collected live (usage counts them), each with its own timestamp. */
  const collect = async (lines: string[]) => {
    const items = lines.map((line) => parseImportLine(line) as Exclude<ReturnType<typeof parseImportLine>, string>)
    const sites = await t.services.ingestor.sites.bySnippets(items.map((item) => item.hit.site))
    const outcomes = await t.services.ingestor.ingest(
      items.map((item) => ({ ...item, source: 'browser', site: sites.get(item.hit.site)! })),
    )
    return outcomes.filter((o) => o.status === 'stored').length
  }

  beforeAll(async () => {
    // the hosted service's plans, read from each organization (a self-hosted deployment is unlimited)
    t = await harness({ kv: kind, now: () => now, with: { plan: undefined } })
    second = (
      await t.call('POST', '/api/v1/sites', {
        key: t.a.write.key,
        body: { domain: `second-${crypto.randomUUID().slice(0, 6)}.example.com` },
      })
    ).json
    const hit = (snippet: string, domain: string, at: string, name: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({ timestamp: at, site: snippet, name, url: `https://${domain}/`, ip: '8.8.8.8', userAgent: FIREFOX, ...extra })
    const stored = await collect([
      hit(t.a.site.snippetId, t.a.site.domain, '2026-11-20T10:00:00Z', 'pageview'),
      hit(t.a.site.snippetId, t.a.site.domain, '2026-11-20T10:01:00Z', 'pageview'),
      hit(t.a.site.snippetId, t.a.site.domain, '2026-11-20T10:02:00Z', 'Signup'),
      hit(t.a.site.snippetId, t.a.site.domain, '2026-11-20T10:03:00Z', 'engagement', { engagement: { ms: 30000, scroll: 50 } }),
      hit(second.snippetId, second.domain, '2026-11-21T10:00:00Z', 'pageview'),
      // last month's events are last month's usage
      hit(t.a.site.snippetId, t.a.site.domain, '2026-10-31T23:59:00Z', 'pageview'),
      // another organization's usage is its own
      hit(t.b.site.snippetId, t.b.site.domain, '2026-11-20T10:00:00Z', 'pageview'),
    ])
    expect(stored).toBe(7)
    // bots of server-side collection are stored and counted, not billed
    const bots = await t.call('POST', '/api/v1/collect', {
      key: t.a.write.key,
      body: {
        site_id: t.a.site.snippetId,
        events: [
          { path: '/', userAgent: GPTBOT },
          { path: '/a', userAgent: GPTBOT },
        ],
      },
    })
    expect(bots.json.ingested).toBe(2)
  })

  it('answers plan, limits, features, subscription, billing period, usage by kind and by site, team size', async () => {
    const res = await t.call('GET', '/api/v1/org', { key: t.a.read.key })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({
      id: t.a.org.id,
      name: 'Org A',
      plan: 'free',
      limits: PLANS.free.limits,
      features: [...PLANS.free.features],
      subscription: { status: 'free', trialEndsAt: null, trialDaysLeft: null },
      billingPeriod: { month: '2026-11', from: '2026-11-01T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z' },
      sites: 2,
      // the harness records no owner: the team is the members org/members lists, none
      team: { size: 0 },
    })
    expect(res.json.usage).toEqual({
      events: 4,
      quota: PLANS.free.limits.monthlyEvents!,
      share: 4 / PLANS.free.limits.monthlyEvents!,
      byKind: { pageview: 3, custom: 1, engagement: 1, bot: 2 },
      bySite: [
        { siteId: t.a.site.id, domain: t.a.site.domain, events: 3, byKind: { pageview: 2, custom: 1, engagement: 1, bot: 2 } },
        { siteId: second.id, domain: second.domain, events: 1, byKind: { pageview: 1 } },
      ],
    })
    expect(res.json.notices).toEqual([])
    // a write key reads it too; the other organization sees only its own
    expect((await t.call('GET', '/api/v1/org', { key: t.a.write.key })).json.usage.events).toBe(4)
    const theirs = (await t.call('GET', '/api/v1/org', { key: t.b.read.key })).json
    expect(theirs.id).toBe(t.b.org.id)
    expect(theirs.usage.bySite).toEqual([{ siteId: t.b.site.id, domain: t.b.site.domain, events: 1, byKind: { pageview: 1 } }])
  })

  it('over the monthly quota is a notice; collection keeps storing', async () => {
    await t.repositories.usage.add(t.b.org.id, '2026-11', { [t.b.site.id]: { pageview: PLANS.free.limits.monthlyEvents! } })
    const over = (await t.call('GET', '/api/v1/org', { key: t.b.read.key })).json
    expect(over.usage.share).toBeGreaterThan(1)
    expect(over.notices).toEqual([{ level: 'warning', code: 'quota_exceeded', message: expect.stringContaining('nothing is dropped') }])
    const hit = JSON.stringify({
      timestamp: '2026-11-21T08:00:00Z',
      site: t.b.site.snippetId,
      name: 'pageview',
      url: `https://${t.b.site.domain}/more`,
      ip: '1.1.1.1',
      userAgent: FIREFOX,
    })
    expect(await collect([hit])).toBe(1)
    expect((await t.call('GET', '/api/v1/org', { key: t.b.read.key })).json.usage.events).toBe(PLANS.free.limits.monthlyEvents! + 2)
  })

  it('does not count imported history as usage, of this month or another', async () => {
    const before = (await t.call('GET', '/api/v1/org', { key: t.a.read.key })).json.usage
    const lastMonth = await t.repositories.usage.get(t.a.org.id, '2026-10')
    const line = (at: string, name = 'pageview') =>
      JSON.stringify({
        timestamp: at,
        site: t.a.site.snippetId,
        name,
        url: `https://${t.a.site.domain}/old`,
        ip: '9.9.9.9',
        userAgent: FIREFOX,
      })
    const result = await importHits(
      [line('2026-10-03T10:00:00Z'), line('2026-11-02T10:00:00Z'), line('2026-11-02T10:01:00Z', 'Signup'), line('2026-11-03T10:00:00Z')],
      t.services.ingestor,
    )
    expect(result).toMatchObject({ imported: 4, rejected: 0 })
    expect((await t.call('GET', '/api/v1/org', { key: t.a.read.key })).json.usage).toEqual(before)
    expect(await t.repositories.usage.get(t.a.org.id, '2026-10')).toEqual(lastMonth)
  })

  it('shows a trial and its ending, and a plan from the plans file', async () => {
    const org = (await t.repositories.orgs.get(t.a.org.id))!
    await t.repositories.orgs.create({ ...org, plan: 'pro', trialEndsAt: '2026-11-25T12:00:00.000Z' })
    const res = (await t.call('GET', '/api/v1/org', { key: t.a.read.key })).json
    expect(res).toMatchObject({
      plan: 'pro',
      limits: PLANS.pro.limits,
      features: [...PLANS.pro.features],
      subscription: { status: 'trialing', trialEndsAt: '2026-11-25T12:00:00.000Z', trialDaysLeft: 3 },
    })
    expect(res.notices.map((n: { code: string }) => n.code)).toEqual(['trial_ending'])
    await t.repositories.orgs.create({ ...org, plan: 'pro', subscriptionStatus: 'past_due', trialEndsAt: null })
    const due = (await t.call('GET', '/api/v1/org', { key: t.a.read.key })).json
    expect(due.subscription.status).toBe('past_due')
    expect(due.notices.map((n: { code: string }) => n.code)).toEqual(['payment_past_due'])
    await t.repositories.orgs.create(org)
  })

  it('needs a key, and an organization-wide one', async () => {
    expect((await t.call('GET', '/api/v1/org')).status).toBe(401)
    const bound = await t.call('GET', '/api/v1/org', { key: t.ingest.key })
    expect(bound.status).toBe(403)
    expect(bound.json.error).toMatch(/organization-wide key/)
  })
})
