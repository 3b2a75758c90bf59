import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { client, getOk, testServices } from '../helpers'
import { UAS } from './report-reference'

/**
 * The page detail's engagement (reports, mean scroll depth, mean time on page). Over whole days it
 * is summed from the daily series' rows; expected numbers are computed here from the hits.
 */

const NOW = new Date('2026-11-22T15:00:00Z')
const TZ = 'Europe/Berlin'
const DAY = 86_400_000

type Hit = { ts: number; name: 'pageview' | 'engagement'; path: string; address: number; ms?: number; scroll?: number }

function hitsOf(): Hit[] {
  const hits: Hit[] = []
  // 20 days back to today: three visitors a day read /post (and one /other), each reporting engagement
  for (let d = 20; d >= 0; d--)
    for (let v = 0; v < 4; v++) {
      const ts = NOW.getTime() - d * DAY - (v + 1) * 3_600_000
      const path = v === 3 ? '/other' : '/post'
      hits.push({ ts, name: 'pageview', path, address: v })
      hits.push({ ts: ts + 60_000, name: 'engagement', path, address: v, ms: 1_000 + 777 * d + 131 * v, scroll: (d * 7 + v * 13) % 101 })
    }
  return hits
}

describe('page detail engagement', () => {
  let call: ReturnType<typeof client>
  let key = ''
  let siteId = ''
  const hits = hitsOf()

  beforeAll(async () => {
    const services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Engagement', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: 'engagement.test', timezone: TZ }, org.id, NOW)
    await services.repositories.sites.create(site)
    siteId = site.id
    const lines = hits.map((h) =>
      JSON.stringify({
        timestamp: new Date(h.ts).toISOString(),
        site: site.snippetId,
        name: h.name,
        url: `https://${site.domain}${h.path}`,
        referrer: null,
        ip: `198.51.100.${h.address}`,
        userAgent: UAS[0],
        ...(h.name === 'engagement' ? { engagement: { ms: h.ms, scroll: h.scroll } } : {}),
      }),
    )
    expect((await importHits(lines, services.ingestor)).rejected).toBe(0)
  }, 300_000)

  it('reports the page’s engagement in the window, as the hits give it', async () => {
    for (const range of ['7d', '30d']) {
      const json = await getOk(call, `/api/v1/pages/detail?site_id=${siteId}&path=/post&range=${range}`, key)
      const [from, to] = [Date.parse(json.range.from), Date.parse(json.range.to)]
      const reports = hits.filter((h) => h.name === 'engagement' && h.path === '/post' && h.ts >= from && h.ts < to)
      expect(reports.length).toBeGreaterThan(10)
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
      expect(json.engagement, range).toEqual({
        reports: reports.length,
        scrollDepth: Math.round(mean(reports.map((h) => h.scroll!)) * 10) / 10,
        timeOnPage: Math.round(mean(reports.map((h) => h.ms!)) / 100) / 10,
      })
    }
  })
})
