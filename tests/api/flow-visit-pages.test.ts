import { beforeAll, describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { flowRolledDaysSql } from '../../lib/reports/query/compile/flow'
import { type SignatureRow, rolledDaysOf } from '../../lib/reports/query/plan'
import { resolveRange } from '../../lib/reports/query/range'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
import { execute } from '../../lib/storage/clickhouse/execute'
import { type TestServices, client, orgWithSites, testServices } from '../helpers'
import { NOW, UAS } from './report-reference'

/** A flow answer's nodes and links as visits by id and by "source -> target". */
const graphOf = (flow: { nodes: { id: string; visits: number }[]; links: { source: string; target: string; visits: number }[] }) => ({
  nodes: Object.fromEntries(flow.nodes.map((n) => [n.id, n.visits])),
  links: Object.fromEntries(flow.links.map((l) => [`${l.source} -> ${l.target}`, l.visits])),
})

/**
 * The flow reads each visit's pageviews from visit_pages, where pageviews stored by separate
 * inserts are separate rows until the engine merges them. With merges stopped, a visit whose
 * pages came one import at a time is still one sequence, in a flow read from visits alone or in
 * today’s part of a flow whose finished days are rolled up. The expected graphs are worked out by hand.
 */
describe('flow over visits stored in pieces', () => {
  let services: TestServices
  let call: ReturnType<typeof client>
  let key = ''
  let siteId = ''
  let rows = 0
  let hit: (minutesAgo: number, path: string, ip: string) => string

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    // this file has the engine to itself (one process per test file)
    await services.clickhouse.command('SYSTEM STOP MERGES visit_pages')
    call = client(services)
    const created = await orgWithSites(services, 'Pieces', [{ domain: 'pieces.flow.test', timezone: 'Europe/Berlin' }], NOW)
    key = created.key
    const [site] = created.sites
    siteId = site.id
    const at = (minutesAgo: number) => new Date(NOW.getTime() - 3 * 3_600_000 - minutesAgo * 60_000).toISOString()
    hit = (minutesAgo: number, path: string, ip: string) =>
      JSON.stringify({
        timestamp: at(minutesAgo),
        site: site.snippetId,
        name: 'pageview',
        url: `https://pieces.flow.test${path}`,
        referrer: null,
        ip,
        userAgent: UAS[0],
      })
    // one visitor: / then /pricing, a reload of it, then /docs; another: / then /docs
    const hits = [
      hit(10, '/', '8.8.8.8'),
      hit(9, '/', '1.1.1.1'),
      hit(8, '/pricing', '8.8.8.8'),
      hit(7, '/docs', '1.1.1.1'),
      hit(6, '/pricing', '8.8.8.8'),
      hit(4, '/docs', '8.8.8.8'),
    ]
    // one import per hit: each visit's pageviews land in several inserts
    for (const line of hits) expect((await importHits([line], services.ingestor)).imported).toBe(1)
    rows = Number(
      (
        await services.clickhouse.query<{ n: string }>('SELECT count() AS n FROM visit_pages WHERE site_id = {site:UUID}', { site: siteId })
      )[0].n,
    )
  })

  it('joins a visit’s rows into one sequence', async () => {
    expect(rows).toBe(6)
    const res = await call('GET', `/api/v1/flow?site_id=${siteId}&range=today&depth=3`, { key })
    expect(res.status).toBe(200)
    expect(res.json.visits).toBe(2)
    expect(graphOf(res.json).nodes).toEqual({
      '0:/': 2,
      '1:/docs': 1,
      '1:/pricing': 1,
      '2:/docs': 1,
    })
    expect(graphOf(res.json).links).toEqual({
      '0:/ -> 1:/docs': 1,
      '0:/ -> 1:/pricing': 1,
      '1:/pricing -> 2:/docs': 1,
    })
  })

  it('joins a visit’s rows into one sequence in today’s part of a flow whose finished days are rolled up', async () => {
    // a visit two days before, / then /docs, its pageviews in two imports too; its day is then rolled up
    const earlier = 2 * 24 * 60
    for (const line of [hit(earlier + 10, '/', '9.9.9.9'), hit(earlier + 5, '/docs', '9.9.9.9')])
      expect((await importHits([line], services.ingestor)).imported).toBe(1)
    await refreshRollups(services.clickhouse, services.repositories, NOW, 40)
    const range = resolveRange({ range: '7d' }, 'Europe/Berlin', NOW)
    const rolled = rolledDaysOf({ range }, await execute<SignatureRow>(services.clickhouse, flowRolledDaysSql(siteId, range)))
    expect(rolled.days).toEqual([new Date(NOW.getTime() - 3 * 3_600_000 - earlier * 60_000).toISOString().slice(0, 10)])
    // today's rows are still apart
    const today = await services.clickhouse.query<{ n: string }>(
      'SELECT count() AS n FROM visit_pages WHERE site_id = {site:UUID} AND session_start >= {from:DateTime64(3)}',
      { site: siteId, from: '2026-11-22 00:00:00.000' },
    )
    expect(Number(today[0].n)).toBe(6)
    const res = await call('GET', `/api/v1/flow?site_id=${siteId}&range=7d&depth=3`, { key })
    expect(res.status).toBe(200)
    expect(res.json.visits).toBe(3)
    expect(graphOf(res.json).nodes).toEqual({
      '0:/': 3,
      '1:/docs': 2,
      '1:/pricing': 1,
      '2:/docs': 1,
    })
    expect(graphOf(res.json).links).toEqual({
      '0:/ -> 1:/docs': 2,
      '0:/ -> 1:/pricing': 1,
      '1:/pricing -> 2:/docs': 1,
    })
  })
})
