import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { memoryRateLimiter } from '../../lib/accounts/ratelimit'
import { importHits } from '../../lib/ingest/import'
import { rollupBuildsSettled } from '../../lib/reports/query/run'
import { applySitePatch } from '../../lib/sites/sites'
import { orgWithSites, testServices } from '../helpers'
import { NOW, fixture } from './report-reference'
import { email, webHarness } from './web-harness'

/**
 * The web application and the shared dashboards spend a budget per client address and, for a
 * shared dashboard, per site, as the API spends one per key; and the reads of a shared or public
 * dashboard store no rollup of their filters, which anyone could otherwise grow one new filter at
 * a time (a 30-day row set per filter).
 */

const CLIENT = 10
const SITE = 25

describe('the budgets of pages, panels and live figures', () => {
  it('answers 429 with Retry-After past a client’s budget or a shared site’s, while other clients and sites are served', async () => {
    let clock = Date.parse('2026-03-02T10:00:00Z')
    const limiter = memoryRateLimiter(() => clock, {
      webClient: { max: CLIENT, windowMs: 60_000 },
      sharedSite: { max: SITE, windowMs: 60_000 },
    })
    const t = await webHarness('embedded', { limiter })
    const cookie = await t.signIn(email())
    const orgId = /([0-9a-f-]{36})$/.exec(
      (await t.request('/app/orgs', { form: { name: 'Budgets' }, cookie })).headers.get('location')!,
    )![1]
    const addSite = async () => {
      const created = await t.request(`/app/orgs/${orgId}/sites`, {
        form: { domain: `budget-${crypto.randomUUID().slice(0, 6)}.example.com` },
        cookie,
      })
      const siteId = /sites\/([0-9a-f-]{36})/.exec(created.headers.get('location')!)![1]
      expect((await t.request(`/app/sites/${siteId}/share`, { form: { access: 'public', shareLevel: 'link' }, cookie })).status).toBe(303)
      return siteId
    }
    const [one, two] = [await addSite(), await addSite()]
    const from = (address: string, path: string, accept = '*/*', held?: string) =>
      t.request(path, { headers: { 'x-forwarded-for': address, accept, ...(held ? { cookie: held } : {}) } })

    // one client: its budget, then 429 as JSON for a script's fetch and as an error page for a page
    for (let i = 0; i < CLIENT; i++) expect((await from('198.51.100.1', `/share/${one}/live`)).status).toBe(200)
    const refused = await from('198.51.100.1', `/share/${one}/live`)
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    const body = await refused.json()
    expect(Object.keys(body)).toEqual(['error'])
    expect(body.error).toMatch(/^too many requests from this network address: 10 a minute; try again in \d+ seconds$/)
    const page = await from('198.51.100.1', `/share/${one}`, 'text/html,application/xhtml+xml')
    expect(page.status).toBe(429)
    expect(page.headers.get('retry-after')).toBeTruthy()
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    expect(await page.text()).toContain('<h1>Too many requests</h1>')
    const panel = await from('198.51.100.1', `/share/${one}/panels/pages`)
    expect(panel.status).toBe(429)
    expect((await panel.json()).error).toMatch(/network address/)
    // another client is served
    expect((await from('198.51.100.2', `/share/${one}/live`)).status).toBe(200)
    // an IPv6 client is its /64: another address of it shares the budget, another /64 does not
    for (let i = 0; i < CLIENT; i++) expect((await from('2001:db8:7:7::1', `/share/${one}/live`)).status).toBe(200)
    expect((await from('2001:db8:7:7::beef', `/share/${one}/live`)).status).toBe(429)
    expect((await from('2001:db8:7:8::1', `/share/${one}/live`)).status).toBe(200)

    // one shared site: every client together; a client refused for its own budget spent none of it
    for (const address of ['192.0.2.1', '192.0.2.2'])
      for (let i = 0; i < CLIENT; i++) expect((await from(address, `/share/${two}/live`)).status).toBe(200)
    for (let i = 0; i < SITE - 2 * CLIENT; i++) expect((await from('192.0.2.3', `/share/${two}/live`)).status).toBe(200)
    const crowded = await from('192.0.2.3', `/share/${two}/live`)
    expect(crowded.status).toBe(429)
    expect((await crowded.json()).error).toMatch(/^too many requests to this shared dashboard from everyone together: 25 a minute/)
    expect(crowded.headers.get('retry-after')).toBeTruthy()
    expect((await from('192.0.2.4', `/share/${two}`, 'text/html')).status).toBe(429)
    // that client is still served another site's
    expect((await from('192.0.2.3', `/share/${one}/live`)).status).toBe(200)

    // the web application's own pages: a member's client past its budget, another client of the same member served
    for (let i = 0; i < CLIENT; i++) expect((await from('203.0.113.9', `/app/sites/${one}`, 'text/html', cookie)).status).toBe(200)
    const member = await from('203.0.113.9', `/app/sites/${one}`, 'text/html', cookie)
    expect(member.status).toBe(429)
    expect(member.headers.get('retry-after')).toBeTruthy()
    expect(await member.text()).toContain('too many requests from this network address')
    expect((await from('203.0.113.10', `/app/sites/${one}`, 'text/html', cookie)).status).toBe(200)

    // once the window has passed, the client is served again
    clock += 2 * 60_000
    expect((await from('198.51.100.1', `/share/${one}/live`)).status).toBe(200)
    expect((await from('192.0.2.5', `/share/${two}/live`)).status).toBe(200)
  })
})

describe('the reads of a shared or public dashboard', () => {
  it('store no rollup of their filters: many distinct filters leave day_rollups and flow_rollups as they were, and answer what the API answers', async () => {
    const services = await testServices({ now: () => NOW })
    const {
      key,
      sites: [site],
    } = await orgWithSites(services, 'Transient', [{ domain: 'transient.rollup.test', timezone: 'Europe/Berlin' }], NOW)
    expect((await importHits(fixture(site.snippetId, site.domain, 'Europe/Berlin', 31).lines, services.ingestor)).rejected).toBe(0)
    // public, with its sections: the flow is shared too
    await services.sites.update(site.id, (s) => applySitePatch(s, { access: 'public', shareLevel: 'full' }))
    const app = createApp(services)
    const get = (path: string, headers: Record<string, string> = {}) => app.request(`https://api.test${path}`, { headers })
    const byKey = async (path: string) => {
      const answer = await get(`${path}&site_id=${site.id}`, { authorization: `Bearer ${key}` })
      expect(answer.status, path).toBe(200)
      return (await answer.json()) as any
    }
    const rows = async (table: 'day_rollups' | 'flow_rollups') =>
      Number(
        (await services.clickhouse.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE site_id = {s:UUID}`, { s: site.id }))[0].n,
      )
    const filters = (i: number) => encodeURIComponent(JSON.stringify([{ dimension: 'path', operator: 'is_not', value: [`/nowhere-${i}`] }]))
    const visitorsOn = (html: string) =>
      Number(/data-metric="visitors"><dt>[^<]*<\/dt><dd><span class="value">([^<]+)</.exec(html)![1].replace(/,/g, ''))

    const before = { days: await rows('day_rollups'), flow: await rows('flow_rollups') }
    for (let i = 0; i < 12; i++) {
      for (const path of [
        `/share/${site.id}`,
        `/share/${site.id}/panels/pages`,
        `/share/${site.id}/panels/sources`,
        `/share/${site.id}/flow`,
      ]) {
        const answer = await get(`${path}?range=30d&filters=${filters(i)}`, { 'x-forwarded-for': `198.51.100.${i + 1}` })
        expect(answer.status, path).toBe(200)
      }
    }
    await rollupBuildsSettled()
    expect(await rows('day_rollups')).toBe(before.days)
    expect(await rows('flow_rollups')).toBe(before.flow)

    // the same reads through a key store their rollups, as they always did
    await byKey(`/api/v1/stats?range=30d&filters=${filters(0)}`)
    await byKey(`/api/v1/flow?range=30d&filters=${filters(0)}`)
    await rollupBuildsSettled()
    const built = { days: await rows('day_rollups'), flow: await rows('flow_rollups') }
    expect(built.days).toBeGreaterThan(before.days)
    expect(built.flow).toBeGreaterThan(before.flow)

    // a shared read over a longer window takes the days rolled up already and the rest from events, storing none,
    // and answers what the API does
    const shared = await get(`/share/${site.id}?range=90d&filters=${filters(0)}`)
    expect(shared.status).toBe(200)
    const seen = visitorsOn(await shared.text())
    await rollupBuildsSettled()
    expect(await rows('day_rollups')).toBe(built.days)
    const answered = await byKey(`/api/v1/stats?range=90d&filters=${filters(0)}`)
    expect(answered.totals.visitors).toBeGreaterThan(0)
    expect(seen).toBe(answered.totals.visitors)
    // and one with no rolled day at all answers from events what the API answers
    const fresh = await get(`/share/${site.id}?range=30d&filters=${filters(99)}`)
    const freshSeen = visitorsOn(await fresh.text())
    expect(freshSeen).toBe((await byKey(`/api/v1/stats?range=30d&filters=${filters(99)}`)).totals.visitors)
  })
})
