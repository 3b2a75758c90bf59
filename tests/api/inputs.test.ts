import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { createApiKey } from '../../lib/accounts/admin'
import { addOwner, acceptInvitation } from '../../lib/accounts/members'
import { createDemo } from '../../lib/operations/demo'
import { importHits } from '../../lib/ingest/import'
import { REDIS_URL, type Harness, harness } from '../helpers'

/**
 * Inputs and answers that do not contradict each other: unknown parameters are refused by name,
 * messages say what is wrong, reads of the same fact agree, and numbers are rounded alike.
 */

const kind = REDIS_URL ? 'redis' : 'embedded'
const UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

/** Digits after the decimal point of a number as JSON writes it. */
const decimals = (v: number) => (String(v).split('.')[1] ?? '').length

describe('inputs and answers that agree', () => {
  let t: Harness
  const now = new Date('2026-11-22T12:00:00Z')
  let site: string
  let mcp: Client

  beforeAll(async () => {
    t = await harness({ kv: kind, now: () => now })
    site = t.a.site.id
    const hit = (minutesAgo: number, path: string, ip: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        timestamp: new Date(now.getTime() - minutesAgo * 60_000).toISOString(),
        site: t.a.site.snippetId,
        name: 'pageview',
        url: `https://${t.a.site.domain}${path}`,
        ip,
        userAgent: UA,
        ...extra,
      })
    // three visitors on /, one of them goes on to /buy; three LCP samples, one of them good
    const lines = [
      hit(3, '/', '203.0.113.1'),
      hit(2, '/buy', '203.0.113.1'),
      hit(3, '/', '203.0.113.2'),
      hit(3, '/', '203.0.113.3'),
      hit(3, '/', '203.0.113.1', { name: 'vital', vital: { name: 'LCP', value: 1000.05 } }),
      hit(3, '/', '203.0.113.2', { name: 'vital', vital: { name: 'LCP', value: 3000.3 } }),
      hit(3, '/', '203.0.113.3', { name: 'vital', vital: { name: 'LCP', value: 5000.7 } }),
      hit(3, '/', '203.0.113.1', { name: 'vital', vital: { name: 'CLS', value: 0.123456 } }),
    ]
    await importHits(lines, t.services.ingestor)
    const app = createApp(t.services)
    mcp = new Client({ name: 'inputs-test', version: '1.0.0' })
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('http://api.test/api/mcp'), {
        requestInit: { headers: { authorization: `Bearer ${t.a.write.key}` } },
        fetch: async (url, init) => app.request(String(url), init as RequestInit),
      }),
    )
  })

  const get = (path: string, key = t.a.read.key) => t.call('GET', path, { key })
  const tool = async (name: string, args: Record<string, unknown>) => {
    const result = (await mcp.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: Record<string, unknown> }
    return result
  }

  describe('unknown parameters and dates without range=custom', () => {
    it('refuses a mistyped parameter by name, with the nearest known one', async () => {
      const typo = await get(`/api/v1/stats?site_id=${site}&rnage=7d`)
      expect(typo).toMatchObject({ status: 400, json: { error: 'rnage: unknown parameter; did you mean range?' } })
      const far = await get(`/api/v1/stats?site_id=${site}&colour=red`)
      expect(far.status).toBe(400)
      expect(far.json.error).toMatch(/^colour: unknown parameter; this endpoint takes .*range/)
      // an endpoint without parameters takes none
      expect(await get('/api/v1/me?verbose=1')).toMatchObject({ status: 400, json: { error: expect.stringMatching(/^verbose: unknown/) } })
      // the key in the URL is a credential, not a parameter; public reads keep taking cache busters
      expect((await get(`/api/v1/stats?site_id=${site}&range=7d`)).status).toBe(200)
    })

    it('refuses from and to without range=custom', async () => {
      const bare = await get(`/api/v1/stats?site_id=${site}&from=2026-11-01&to=2026-11-10`)
      expect(bare).toMatchObject({ status: 400, json: { error: 'from: taken only with range=custom (the range here is 30d)' } })
      const named = await get(`/api/v1/timeseries?site_id=${site}&range=7d&to=2026-11-10`)
      expect(named).toMatchObject({ status: 400, json: { error: 'to: taken only with range=custom (the range here is 7d)' } })
      expect((await get(`/api/v1/stats?site_id=${site}&range=custom&from=2026-11-01&to=2026-11-22`)).status).toBe(200)
    })

    it('answers the same through MCP, where arguments are an object', async () => {
      const typo = await tool('get_stats', { site_id: site, rnage: '7d' })
      expect(typo.isError).toBe(true)
      expect(typo.structuredContent).toEqual({ status: 400, error: 'rnage: unknown parameter; did you mean range?' })
      const dates = await tool('get_stats', { site_id: site, from: '2026-11-01', to: '2026-11-10' })
      expect(dates.structuredContent).toMatchObject({ status: 400, error: expect.stringContaining('range=custom') })
      expect((await tool('get_stats', { site_id: site, range: '7d' })).isError).toBeFalsy()
    })

    it('answers /api/v1/ as /api/v1', async () => {
      const plain = await t.call('GET', '/api/v1')
      const slashed = await t.call('GET', '/api/v1/')
      expect(slashed.status).toBe(200)
      expect(slashed.json).toEqual(plain.json)
    })
  })

  describe('messages', () => {
    it('says a missing required parameter is required', async () => {
      expect(await get('/api/v1/stats')).toMatchObject({ status: 400, json: { error: 'site_id: required' } })
      expect(await get('/api/v1/annotations')).toMatchObject({ status: 400, json: { error: 'site_id: required' } })
      const missing = await t.call('POST', '/api/v1/goals', {
        key: t.a.write.key,
        body: { site_id: site, name: 'Signup', matchValue: '/x' },
      })
      expect(missing).toMatchObject({ status: 400, json: { error: 'type: required' } })
      // a schema's own hint is kept
      const unconfirmed = await t.call('DELETE', `/api/v1/sites/${site}`, { key: t.a.write.key })
      expect(unconfirmed).toMatchObject({ status: 400, json: { error: 'confirm: required: repeat the site domain to confirm' } })
    })

    it('takes site_id as well as siteId on annotations, in REST and MCP', async () => {
      const made = await t.call('POST', '/api/v1/annotations', { key: t.a.write.key, body: { site_id: site, title: 'Deploy' } })
      expect(made.status).toBe(201)
      const bySiteId = await get(`/api/v1/annotations?site_id=${site}`)
      expect(bySiteId.status).toBe(200)
      expect(bySiteId.json.annotations.map((a: { id: string }) => a.id)).toEqual([made.json.id])
      expect((await get(`/api/v1/annotations?siteId=${site}`)).json).toEqual(bySiteId.json)
      expect((await get(`/api/v1/annotations?site_id=${t.a.site.snippetId}`)).json).toEqual(bySiteId.json)
      const viaTool = await tool('list_annotations', { site_id: site })
      expect(viaTool.isError).toBeFalsy()
      expect(viaTool.structuredContent).toEqual(bySiteId.json)
      const conflicting = await get(`/api/v1/annotations?siteId=${site}&site_id=${t.b.site.id}`)
      expect(conflicting).toMatchObject({ status: 400, json: { error: expect.stringMatching(/^site_id: names another site/) } })
    })

    it('tells a revoked key from a made-up one', async () => {
      const doomed = await createApiKey(t.repositories, { orgId: t.a.org.id, name: 'doomed', scope: 'read' }, now)
      expect((await get('/api/v1/me', doomed.key)).status).toBe(200)
      expect(await get('/api/v1/me', 'wak_madeup_0000000000000000')).toMatchObject({ status: 401, json: { error: 'invalid API key' } })
      const revoked = await t.call('DELETE', `/api/v1/org/api-keys?id=${doomed.id}`, { key: t.a.write.key })
      expect(revoked.status).toBe(200)
      const after = await get('/api/v1/me', doomed.key)
      expect(after.status).toBe(401)
      expect(after.json.error).toMatch(/^API key was revoked/)
    })

    it('says an invitation accepted twice was already accepted', async () => {
      const invited = await t.call('POST', '/api/v1/org/members', {
        key: t.a.write.key,
        body: { email: 'twice@example.com', role: 'member' },
      })
      expect(invited.status).toBe(201)
      await acceptInvitation(t.repositories, invited.json.id, now)
      await expect(acceptInvitation(t.repositories, invited.json.id, now)).rejects.toMatchObject({
        status: 409,
        message: expect.stringContaining('was already accepted'),
      })
      await expect(acceptInvitation(t.repositories, crypto.randomUUID(), now)).rejects.toMatchObject({ status: 404 })
    })
  })

  describe('one source of truth', () => {
    it('the site, the listing, the site facts and the install read agree about the install', async () => {
      const one = (await get(`/api/v1/sites/${site}`)).json.install
      const install = (await get(`/api/v1/sites/${site}/install`)).json
      const facts = (await get(`/api/v1/site?site_id=${site}`)).json.install
      const listed = (await get('/api/v1/sites')).json.sites.find((s: { id: string }) => s.id === site).install
      const bare = (await get('/api/v1/sites?stats=0')).json.sites.find((s: { id: string }) => s.id === site).install
      const firstEventAt = new Date(now.getTime() - 3 * 60_000).toISOString()
      expect(install).toMatchObject({ installed: true, recording: true, firstEventAt })
      for (const view of [one, facts, listed, bare]) {
        expect(view).toMatchObject({ installed: true, recording: true, firstEventAt, lastEventAt: install.lastEventAt })
      }
      // a site without events says so everywhere too
      const other = (await get(`/api/v1/sites/${t.b.site.id}`, t.b.read.key)).json.install
      expect(other).toMatchObject({ installed: false, recording: false, firstEventAt: null })
    })

    it('an ingest key made outside the ingest-key endpoint exists for it', async () => {
      // the harness makes a site-bound write key as the admin CLI does
      const state = await get(`/api/v1/sites/${site}/ingest-key`, t.a.write.key)
      expect(state.json).toMatchObject({ exists: true, id: t.ingest.id, prefix: t.ingest.prefix })
      await t.call('DELETE', `/api/v1/org/api-keys?id=${t.ingest.id}`, { key: t.a.write.key })
      expect((await get(`/api/v1/sites/${site}/ingest-key`, t.a.write.key)).json).toEqual({ exists: false })
    })

    it('the team size is the members listed, the demo owner included', async () => {
      const teamOf = async (key: string) => ({
        size: (await get('/api/v1/org', key)).json.team.size,
        members: (await get('/api/v1/org/members', key)).json.members.length,
      })
      const before = await teamOf(t.b.write.key)
      expect(before.size).toBe(before.members)
      await addOwner(t.repositories, t.b.org.id, 'owner@example.org', now)
      expect(await teamOf(t.b.write.key)).toEqual({ size: before.members + 1, members: before.members + 1 })

      const demo = await createDemo(t.repositories, now)
      expect(await teamOf(demo.writeKey)).toEqual({ size: 1, members: 1 })
    })
  })

  describe('numbers', () => {
    it('answers fractions to 4 decimals and milliseconds to 1', async () => {
      const vitals = (await get(`/api/v1/vitals?site_id=${site}&range=today&percentile=90`)).json
      // one good sample of three (LCP good up to 2500 ms)
      expect(vitals.metrics.LCP).toMatchObject({ samples: 3, good: 0.3333, needsImprovement: 0.3333, poor: 0.3333 })
      expect(decimals(vitals.metrics.LCP.value)).toBeLessThanOrEqual(1)
      expect(decimals(vitals.summary.LCP)).toBeLessThanOrEqual(1)
      expect(vitals.metrics.CLS.value).toBe(0.1235)

      const funnel = await t.call('POST', '/api/v1/funnels', {
        key: t.a.write.key,
        body: {
          site_id: site,
          name: 'Buy',
          steps: [
            { type: 'page', value: '/' },
            { type: 'page', value: '/buy' },
          ],
        },
      })
      expect(funnel.status).toBe(201)
      const result = (await get(`/api/v1/funnels?site_id=${site}&range=today`)).json.result
      expect(result.steps.map((s: { visitors: number }) => s.visitors)).toEqual([3, 1])
      expect(result.steps[1]).toMatchObject({ conversionFromPrevious: 0.3333, conversionFromFirst: 0.3333 })
    })
  })

  describe('the live count and realtime', () => {
    it('answers halfHour only on the live count asked without a range', async () => {
      await t.call('PATCH', `/api/v1/sites/${site}`, { key: t.a.write.key, body: { publicCounts: true } })
      const live = async (query: string) => (await t.call('GET', `/api/public/live?site=${t.a.site.snippetId}${query}`)).json
      // asked with a range first, so a shared cached answer cannot leak halfHour into it
      for (const range of ['5m', 'realtime', '30m']) {
        const answer = await live(`&range=${range}`)
        expect(answer.visitors).toBeGreaterThan(0)
        expect(answer).not.toHaveProperty('halfHour')
      }
      expect(await live('')).toMatchObject({ range: '5m', visitors: 3, halfHour: 3 })
      expect(await live('&range=5m')).not.toHaveProperty('halfHour')
    })

    it('states both windows of the realtime read', async () => {
      const { range } = (await get(`/api/v1/realtime?site_id=${site}`)).json
      const minutes = (w: { from: string; to: string }) => (Date.parse(w.to) - Date.parse(w.from)) / 60_000
      expect(minutes(range.windows.now)).toBe(5)
      expect(minutes(range.windows.halfHour)).toBe(30)
      expect(Date.parse(range.windows.now.to)).toBe(now.getTime())
    })
  })

  it('never tells a person to CNAME to an address without PUBLIC_URL', async () => {
    const app = createApp({ ...t.services, publicUrl: undefined })
    const ask = async (origin: string) => {
      const res = await app.request(`${origin}/api/v1/sites/${site}/custom-domain`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.a.write.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ domain: `stats.${t.a.site.domain}` }),
      })
      return (await res.json()) as { cnameTarget: string | null; detail: string }
    }
    const local = await ask('http://127.0.0.1:8787')
    expect(local.cnameTarget).toBeNull()
    expect(local.detail).toContain('PUBLIC_URL')
    expect(local.detail).not.toContain('127.0.0.1')
    expect((await ask('http://localhost:8787')).cnameTarget).toBeNull()
    expect((await ask('https://analytics.example.net')).cnameTarget).toBe('analytics.example.net')
  })
})
