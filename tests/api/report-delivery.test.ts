import { createHmac } from 'node:crypto'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nodeMailer } from '../../lib/network/mail-node'
import { deliverReports, duePeriods } from '../../lib/jobs/report-delivery'
import { importHits } from '../../lib/ingest/import'
import { type Site, newSite } from '../../lib/sites/sites'
import { harness, tempDir, type Harness } from '../helpers'
import { smtpSink, webhookSink } from '../sinks'

/** Monday 23 November 2026, 10:00 in Berlin: the week of 16 to 22 November is due. */
const MONDAY = new Date('2026-11-23T09:00:00Z')
const SECRET = 'whsec_test-secret'
const FAST_RETRIES = [20, 40]

describe('report delivery', () => {
  let t: Harness
  let smtp: Awaited<ReturnType<typeof smtpSink>>
  let hooks: Awaited<ReturnType<typeof webhookSink>>
  const logs: string[] = []
  const log = (message: string) => logs.push(message)

  const configure = async (site: Site, alerts: Partial<Site['alerts']>, webhookSecret?: string) => {
    return t.services.sites.update(site.id, (fresh) => ({ ...fresh, alerts: { ...fresh.alerts, ...alerts }, webhookSecret }))
  }
  const deps = () => ({
    ...t.services,
    mailer: nodeMailer({ smtpUrl: smtp.url, dataDir: tempDir('unused-data'), from: 'reports@api.test', log }),
  })

  beforeAll(async () => {
    t = await harness({ now: () => MONDAY })
    smtp = await smtpSink()
    hooks = await webhookSink()
    const hit = (day: string, path: string, ip: string) =>
      JSON.stringify({
        timestamp: `${day}T10:00:00Z`,
        site: t.a.site.snippetId,
        name: 'pageview',
        url: `https://${t.a.site.domain}${path}`,
        ip,
        referrer: 'https://news.ycombinator.com/',
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
      })
    // three visitors in the reported week, one in the week before
    await importHits(
      [
        hit('2026-11-17', '/pricing', '203.0.113.1'),
        hit('2026-11-18', '/pricing', '203.0.113.2'),
        hit('2026-11-19', '/', '203.0.113.3'),
        hit('2026-11-10', '/', '203.0.113.4'),
      ],
      t.services.ingestor,
    )
  })
  afterAll(async () => {
    await smtp?.close()
    await hooks?.close()
  })

  it('is due on Mondays and on the 1st, in the site timezone', () => {
    const site = newSite({ domain: 'x.example.com', timezone: 'Europe/Berlin' }, 'org', MONDAY)
    site.alerts.weeklyReport = site.alerts.monthlyReport = true
    expect(duePeriods(site, MONDAY).map((p) => [p.kind, `${p.from}`, `${p.to}`, `${p.previousFrom}`, `${p.previousTo}`])).toEqual([
      ['weekly', '2026-11-16', '2026-11-22', '2026-11-09', '2026-11-15'],
    ])
    // Sunday 23:30 in UTC is already Monday in Berlin, not yet in New York
    expect(duePeriods(site, new Date('2026-11-22T23:30:00Z'))).toHaveLength(1)
    expect(duePeriods({ ...site, timezone: 'America/New_York' }, new Date('2026-11-23T03:00:00Z'))).toHaveLength(0)
    // 1 December in Berlin: November against October
    const monthly = duePeriods(site, new Date('2026-11-30T23:30:00Z'))
    expect(monthly.map((p) => [p.kind, `${p.from}`, `${p.to}`, `${p.previousFrom}`, `${p.previousTo}`])).toEqual([
      ['monthly', '2026-11-01', '2026-11-30', '2026-10-01', '2026-10-31'],
    ])
    expect(duePeriods({ ...site, alerts: { ...site.alerts, weeklyReport: false } }, MONDAY)).toEqual([])
  })

  it('sends the weekly report by SMTP and to the signed webhook, once however often or concurrently the job runs', async () => {
    await configure(
      t.a.site,
      { weeklyReport: true, recipients: ['ann@example.com', 'bo@example.org'], webhookUrl: `${hooks.url}/weekly` },
      SECRET,
    )
    const runs = await Promise.all([deliverReports(deps(), MONDAY, { log }), deliverReports(deps(), MONDAY, { log })])
    expect(runs.reduce((n, r) => n + r.sent, 0)).toBe(2)
    expect((await deliverReports(deps(), new Date(MONDAY.getTime() + 3600_000), { log })).sent).toBe(0)

    expect(smtp.received).toHaveLength(1)
    const mail = smtp.received[0]
    expect(mail.to.sort()).toEqual(['ann@example.com', 'bo@example.org'])
    expect(mail.raw).toContain(`Subject: Weekly report for ${t.a.site.domain}: 2026-11-16 to 2026-11-22`)
    const text = mail.raw.replace(/=\r?\n/g, '')
    expect(text).toMatch(/Visitors\s+3\s+\+200% \(was 1\)/)
    expect(text).toMatch(/\/pricing\s+2 visitors/)
    expect(text).toContain('Top sources')

    const weekly = hooks.requests.filter((r) => r.path === '/weekly')
    expect(weekly).toHaveLength(1)
    const [request] = weekly
    expect(request.headers['x-signature']).toBe(`sha256=${createHmac('sha256', SECRET).update(request.body).digest('hex')}`)
    expect(request.headers['content-type']).toBe('application/json')
    const payload = JSON.parse(request.body)
    expect(payload).toMatchObject({
      event: 'report.weekly',
      site: { id: t.a.site.id, domain: t.a.site.domain, timezone: 'Europe/Berlin' },
      period: { from: '2026-11-16', to: '2026-11-22' },
      previousPeriod: { from: '2026-11-09', to: '2026-11-15' },
      metrics: { visitors: { current: 3, previous: 1, change: 2 }, pageviews: { current: 3, previous: 1 } },
      topPages: [
        { value: '/pricing', visitors: 2, pageviews: 2 },
        { value: '/', visitors: 1, pageviews: 1 },
      ],
    })
    expect(payload.topSources[0]).toMatchObject({ visitors: 3 })
    expect(request.headers['x-delivery-id']).toBe(payload.deliveryId)
  })

  it('retries a failed webhook with backoff, and a failed site neither stops the others nor loses its report', async () => {
    const now = new Date('2026-11-30T09:00:00Z')
    const broken = newSite({ domain: `broken-${crypto.randomUUID().slice(0, 6)}.example.com`, timezone: 'UTC' }, t.b.org.id, now)
    await t.repositories.sites.create(broken)
    await configure(broken, { weeklyReport: true, webhookUrl: `${hooks.url}/broken` }, SECRET)
    await configure((await t.repositories.sites.get(t.b.site.id))!, { weeklyReport: true, webhookUrl: `${hooks.url}/flaky` }, SECRET)
    await configure((await t.repositories.sites.get(t.a.site.id))!, { weeklyReport: false })
    // the broken site's receiver refuses for good (400); the flaky one fails twice (500, 503), then takes it
    hooks.plan.set('/broken', [400, 400, 400])
    hooks.plan.set('/flaky', [500, 503])
    const answers = (path: string) => hooks.requests.filter((r) => r.path === path).map((r) => r.status)
    logs.length = 0
    const result = await deliverReports(deps(), now, { log, retryDelaysMs: FAST_RETRIES })
    expect(result).toEqual({ sent: 1, failed: 1 })
    expect(answers('/flaky')).toEqual([500, 503, 200])
    // the same signed body each time
    expect(new Set(hooks.requests.filter((r) => r.path === '/flaky').map((r) => `${r.headers['x-signature']} ${r.body}`)).size).toBe(1)
    // a 400 is final: no retry
    expect(answers('/broken')).toEqual([400])
    expect(logs.some((line) => line.includes(`report of site ${broken.id} failed`) && line.includes('answered 400'))).toBe(true)
    // its claim was given back: the next run delivers it once the receiver takes it
    hooks.plan.delete('/broken')
    expect(await deliverReports(deps(), now, { log, retryDelaysMs: FAST_RETRIES })).toEqual({ sent: 1, failed: 0 })
    expect(answers('/broken')).toEqual([400, 200])
    expect(await deliverReports(deps(), now, { log, retryDelaysMs: FAST_RETRIES })).toEqual({ sent: 0, failed: 0 })
    expect(answers('/flaky')).toEqual([500, 503, 200])
  })

  it('writes each message as an .eml file to the outbox when no SMTP server is configured', async () => {
    const dataDir = tempDir('data')
    const outbox = join(dataDir, 'outbox')
    const lines: string[] = []
    const mailer = nodeMailer({ dataDir, from: 'reports@api.test', log: (m) => lines.push(m) })
    await mailer.send({ to: ['ann@example.com'], subject: 'Weekly report for example.com', text: 'Visitors 3' })
    const files = readdirSync(outbox)
    expect(files).toHaveLength(1)
    expect(files[0]).toMatch(/\.eml$/)
    const raw = readFileSync(join(outbox, files[0]), 'utf8')
    expect(raw).toContain('To: ann@example.com')
    expect(raw).toContain('Subject: Weekly report for example.com')
    expect(raw).toContain('Visitors 3')
    expect(lines[0]).toContain(join(outbox, files[0]))
  })
})
