import { createHmac } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { nodeMailer } from '../../lib/network/mail-node'
import { deliverTrafficAlerts, dueAlerts } from '../../lib/jobs/traffic-alerts'
import { importHits } from '../../lib/ingest/import'
import { type Site, newSite } from '../../lib/sites/sites'
import { client, tempDir, testServices } from '../helpers'
import { smtpSink, webhookSink } from '../sinks'
import { UAS } from './report-reference'

/**
 * Spike and drop alerts. The site (UTC) has 40 visitors in each hour from 12:00 to 18:00 every
 * day for four weeks; on 18 November, 100 more arrive from one referrer from 13:00 and none at
 * all from 16:00 to 17:00. By the rule, an hour's usual is 40 (the median of the same hour in the
 * weeks before, all 40), spread √40: a spike or drop must move by 5√40 ≈ 31.6 visitors.
 */

const SECRET = 'whsec_alerts-secret'
const DURING_SPIKE = new Date('2026-11-18T13:40:00Z')
const AFTER_DROP = new Date('2026-11-18T17:05:00Z')
const FAST_RETRIES = [20, 40]

function alertingHits(snippet: string, domain: string) {
  const lines: string[] = []
  let n = 0
  const hit = (ts: number, referrer: string | null) => {
    n++
    lines.push(
      JSON.stringify({
        timestamp: new Date(ts).toISOString(),
        site: snippet,
        name: 'pageview',
        url: `https://${domain}/`,
        referrer,
        ip: `198.18.${(n >> 8) & 255}.${n & 255}`,
        userAgent: UAS[n % UAS.length],
      }),
    )
  }
  for (let day = Date.parse('2026-10-21T00:00:00Z'); day <= Date.parse('2026-11-18T00:00:00Z'); day += 86_400_000) {
    for (let hour = 12; hour < 18; hour++) {
      const from = day + hour * 3_600_000
      const quiet = day === Date.parse('2026-11-18T00:00:00Z') && hour === 16
      if (!quiet) for (let i = 0; i < 40; i++) hit(from + i * 60_000, null)
      if (day === Date.parse('2026-11-18T00:00:00Z') && hour === 13)
        for (let i = 0; i < 100; i++) hit(from + i * 20_000, 'https://news.ycombinator.com/item?id=1')
    }
  }
  return lines
}

describe('spike and drop alerts', () => {
  let clock = DURING_SPIKE
  let services: Awaited<ReturnType<typeof testServices>>
  let smtp: Awaited<ReturnType<typeof smtpSink>>
  let hooks: Awaited<ReturnType<typeof webhookSink>>
  let site: Site
  let quiet: Site
  let broken: Site
  let key = ''
  const logs: string[] = []
  const log = (message: string) => logs.push(message)
  const deps = () => ({
    ...services,
    mailer: nodeMailer({ smtpUrl: smtp.url, dataDir: tempDir('unused-data'), from: 'alerts@api.test', log }),
  })
  /** A site with its alert settings as stored (an http receiver on this machine, which the settings API would refuse). */
  const configured = (s: Site, alerts: Partial<Site['alerts']>, webhookSecret?: string): Site => ({
    ...s,
    alerts: { ...s.alerts, ...alerts },
    ...(webhookSecret ? { webhookSecret } : {}),
  })

  beforeAll(async () => {
    services = await testServices({ now: () => clock })
    smtp = await smtpSink()
    hooks = await webhookSink()
    const org = await createOrg(services.repositories, 'Alerts', clock)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, clock)).key
    site = configured(
      newSite({ domain: 'alerting.why.test', timezone: 'UTC' }, org.id, clock),
      { spikeAlerts: true, dropAlerts: true, recipients: ['ops@example.com'], webhookUrl: `${hooks.url}/alerts` },
      SECRET,
    )
    // no traffic, alerts off
    quiet = configured(newSite({ domain: 'quiet.why.test', timezone: 'UTC' }, org.id, clock), {
      spikeAlerts: false,
      dropAlerts: false,
      recipients: ['ops@example.com'],
    })
    // the same traffic, a receiver that refuses for good
    broken = configured(
      newSite({ domain: 'broken.why.test', timezone: 'UTC' }, org.id, clock),
      { spikeAlerts: true, dropAlerts: true, webhookUrl: `${hooks.url}/broken` },
      SECRET,
    )
    for (const s of [site, quiet, broken]) await services.repositories.sites.create(s)
    const lines = [...alertingHits(site.snippetId, site.domain), ...alertingHits(broken.snippetId, broken.domain)]
    // the hits are imported as of the end of that day (an import refuses hits from the future)
    clock = new Date('2026-11-19T00:00:00Z')
    const result = await importHits(lines, services.ingestor)
    clock = DURING_SPIKE
    expect(result.rejected, JSON.stringify(result.errors.slice(0, 3))).toBe(0)
    hooks.plan.set('/broken', [400, 400, 400, 400])
  }, 300_000)
  afterAll(async () => {
    await smtp?.close()
    await hooks?.close()
  })

  it('alerts a spike while its hour is under way, by e-mail and signed webhook, once however often or concurrently the job runs', async () => {
    clock = DURING_SPIKE
    const runs = await Promise.all([
      deliverTrafficAlerts(deps(), clock, { log, retryDelaysMs: FAST_RETRIES }),
      deliverTrafficAlerts(deps(), clock, { log, retryDelaysMs: FAST_RETRIES }),
    ])
    // e-mail and webhook of the good site; the broken one failed in both runs (its claim given back), without stopping the other
    expect(runs.reduce((n, r) => n + r.sent, 0)).toBe(2)
    // (the second run may find the broken site's claim still held by the first, and skip it)
    expect(runs.reduce((n, r) => n + r.failed, 0)).toBeGreaterThanOrEqual(1)
    expect(logs.some((l) => l.includes(`traffic alerts of site ${broken.id} failed`) && l.includes('answered 400'))).toBe(true)
    expect(
      await deliverTrafficAlerts(deps(), new Date(DURING_SPIKE.getTime() + 600_000), { log, retryDelaysMs: FAST_RETRIES }),
    ).toMatchObject({ sent: 0 })

    const [spike] = (await client(services)('GET', `/api/v1/spikes?site_id=${site.id}&range=today`, { key })).json.spikes
    expect(spike).toMatchObject({ start: '2026-11-18T13:00:00+00:00', visitors: 140, expected: 40 })
    const delivered = hooks.requests.filter((r) => r.path === '/alerts')
    expect(delivered).toHaveLength(1)
    const [request] = delivered
    expect(request.headers['x-signature']).toBe(`sha256=${createHmac('sha256', SECRET).update(request.body).digest('hex')}`)
    expect(request.headers['x-event']).toBe('alert.spike')
    expect(JSON.parse(request.body)).toMatchObject({
      event: 'alert.spike',
      site: { id: site.id, domain: site.domain },
      alert: {
        kind: 'spike',
        id: spike.id,
        start: '2026-11-18T13:00:00+00:00',
        end: '2026-11-18T14:00:00+00:00',
        visitors: 140,
        expected: 40,
        ratio: 3.5,
      },
    })
    expect(smtp.received).toHaveLength(1)
    expect(smtp.received[0].to).toEqual(['ops@example.com'])
    expect(smtp.received[0].raw).toContain(`Subject: Traffic spike on ${site.domain} at 2026-11-18T13:00:00+00:00`)
  })

  it('alerts a drop once its hour is over, and not the spike again', async () => {
    clock = new Date('2026-11-18T16:50:00Z')
    // the quiet hour is still under way: no drop yet
    expect((await dueAlerts(deps(), site, clock)).map((a) => a.kind)).toEqual(['spike'])
    clock = AFTER_DROP
    expect(await dueAlerts(deps(), site, clock)).toEqual([
      {
        kind: 'drop',
        id: expect.stringMatching(/^h\d+-[0-9a-f]{8}$/),
        start: '2026-11-18T16:00:00+00:00',
        end: '2026-11-18T17:00:00+00:00',
        visitors: 0,
        expected: 40,
        ratio: 0,
      },
    ])
    hooks.plan.delete('/broken')
    const result = await deliverTrafficAlerts(deps(), clock, { log, retryDelaysMs: FAST_RETRIES })
    // the drop to both channels of the good site; the broken site's drop only (its spike is no longer recent)
    expect(result).toEqual({ sent: 3, failed: 0 })
    expect(hooks.requests.filter((r) => r.path === '/alerts').map((r) => JSON.parse(r.body).event)).toEqual(['alert.spike', 'alert.drop'])
    expect(smtp.received.map((m) => /Subject: ([^\r\n]+)/.exec(m.raw)![1])).toEqual([
      `Traffic spike on ${site.domain} at 2026-11-18T13:00:00+00:00`,
      `Traffic drop on ${site.domain} at 2026-11-18T16:00:00+00:00`,
    ])
    expect(await deliverTrafficAlerts(deps(), clock, { log, retryDelaysMs: FAST_RETRIES })).toEqual({ sent: 0, failed: 0 })
  })

  it('follows the settings: alerts off, or a threshold the hour did not reach', async () => {
    expect(await dueAlerts(deps(), quiet, DURING_SPIKE)).toEqual([])
    expect(await dueAlerts(deps(), { ...site, alerts: { ...site.alerts, spikeAlerts: false, dropAlerts: false } }, DURING_SPIKE)).toEqual(
      [],
    )
    expect(await dueAlerts(deps(), { ...site, alerts: { ...site.alerts, spikeThreshold: 4 } }, DURING_SPIKE)).toEqual([])
    expect(
      (await dueAlerts(deps(), { ...site, alerts: { ...site.alerts, spikeThreshold: 3.5 } }, DURING_SPIKE)).map((a) => a.kind),
    ).toEqual(['spike'])
    expect(await dueAlerts(deps(), { ...site, alerts: { ...site.alerts, dropAlerts: false } }, AFTER_DROP)).toEqual([])
  })
})
