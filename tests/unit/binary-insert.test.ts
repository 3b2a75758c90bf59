import { describe, expect, it } from 'vitest'
import { createOrg } from '../../lib/accounts/admin'
import { Ingestor } from '../../lib/ingest/pipeline'
import type { EventRow } from '../../lib/ingest/rows'
import { EVENTS_INPUT, type IngestBatch } from '../../lib/ingest/sink'
import { SiteDirectory } from '../../lib/sites/site-directory'
import { newSite } from '../../lib/sites/sites'
import type { InsertFormat } from '../../lib/storage/clickhouse/chdb'
import { binaryRows } from '../../lib/storage/clickhouse/native'
import { collectLines, testClickHouse, testServices } from '../helpers'

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'
const CONTROLS = `${Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join('')}\u007f\u0085\u009f`
const NESTED = JSON.stringify({ a: { b: [1, { c: '"quoted" \\ back' }] }, d: null })
const HUGE = 'ж😀x'.repeat(400_000)

/** Rows the pipeline makes of hostile hits of a site of its own. */
async function pipedRows(): Promise<EventRow[]> {
  const { repositories } = await testServices()
  const org = await createOrg(repositories, 'Binary', new Date())
  const site = newSite({ domain: `binary-${crypto.randomUUID().slice(0, 8)}.example.com` }, org.id, new Date())
  await repositories.sites.create(site)
  const at = Date.now() - 3600_000
  const hit = (i: number, extra: object) =>
    JSON.stringify({
      timestamp: new Date(at + i * 1000).toISOString(),
      site: site.snippetId,
      url: `https://${site.domain}/p/${i}?q=${encodeURIComponent(CONTROLS)}`,
      ip: `203.0.113.${i % 5}`,
      userAgent: FIREFOX,
      name: 'pageview',
      ...extra,
    })
  const lines = [
    hit(0, { referrer: `https://news.example/\ud800${CONTROLS}` }),
    hit(1, { name: `signup\udc00${CONTROLS}`, props: { nested: NESTED, 'k\ud800': 'v\u0000', emoji: '😀'.repeat(500), n: 42 } }),
    hit(2, { name: 'buy', revenue: { amount: '-12345678901234.5678', currency: 'EUR' }, props: { big: 'x'.repeat(2000) } }),
    hit(3, { name: 'buy', revenue: { amount: 0.00001, currency: 'USD' } }),
    hit(4, { name: 'error', error: { message: `boom\ud800 ${NESTED} ${CONTROLS}`, name: 'TypeError', stack: 'at f (a.js:1:2)' } }),
    hit(5, {
      name: 'click',
      click: { selector: 'a#x', text: CONTROLS, href: 'https://out.example/ü', x: 0.25, y: 1, docWidth: 40000, docHeight: 9 },
    }),
  ]
  const made: IngestBatch[] = []
  const ingestor = new Ingestor({
    sites: new SiteDirectory(repositories.sites),
    repositories,
    sink: { write: async (b) => void made.push(b), flush: async () => {} },
    now: () => new Date(),
  })
  expect((await collectLines(lines, ingestor)).imported).toBe(lines.length)
  const piped = made.flatMap((b) => b.events)
  expect(piped.length).toBe(lines.length)
  return piped
}

/**
 * Rows sent in a binary format (Native or RowBinary, which bench:engine-insert compares) are stored exactly as the
 * same rows sent as JSON are: every column of events, and what the views on it make of them.
 */
describe('rows inserted in a binary format', () => {
  it('hostile hits through the pipeline, and hostile rows made behind its checks, are stored as the JSON path stores them', async () => {
    const clickhouse = await testClickHouse()
    const piped = await pipedRows()
    // made behind the door's checks, as an older journal could hold them
    const base = piped[0]
    const behind: EventRow[] = [
      { ...base, pathname: HUGE, element_text: CONTROLS, props: { nested: NESTED, [CONTROLS]: HUGE.slice(0, 1000) } },
      { ...base, visitor_id: '18446744073709551615', session_id: '0', latitude: -90.5, longitude: 3.4e38, vital_value: 1e300 },
      { ...base, timestamp: '1970-01-01 00:00:00.000', session_start: '2299-12-31 23:59:59.999', revenue_amount: '0.99999' },
      { ...base, error_fingerprint: '9223372036854775808', engaged_ms: 4294967295, scroll_depth: 255, click_x: 65535 },
      // not finite: JSON sends null, stored as 0; such rows go as JSON, whatever the format
      { ...base, vital_value: Number.NaN, pathname: '/nan' },
    ]
    const rows = [...piped, ...behind]

    const columns = (
      await clickhouse.query<{ name: string; type: string }>(
        "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'events_input'",
      )
    ).filter((c) => c.name in base)
    // every row but the last is sent in binary, not as JSON
    expect(binaryRows('Native', columns, rows.slice(0, -1))).not.toBeNull()
    expect(binaryRows('RowBinary', columns, rows.slice(0, -1))).not.toBeNull()
    expect(binaryRows('Native', columns, rows)).toBeNull()

    const stored = async (format: InsertFormat) => {
      const siteId = crypto.randomUUID()
      clickhouse.insertFormat = format
      try {
        // the row that goes as JSON whatever the format apart, so that the others go in the format
        const mine = rows.map((r) => ({ ...r, site_id: siteId }))
        await clickhouse.insert(EVENTS_INPUT, mine.slice(0, -1), { token: crypto.randomUUID() })
        await clickhouse.insert(EVENTS_INPUT, mine.slice(-1), { token: crypto.randomUUID() })
      } finally {
        clickhouse.insertFormat = 'JSONCompactEachRow'
      }
      const params = { s: siteId }
      return {
        events: await clickhouse.query(
          'SELECT * EXCEPT site_id, hex(pathname) AS path_bytes, hex(name) AS name_bytes FROM events WHERE site_id = {s:UUID} ORDER BY timestamp, path_bytes, name_bytes, visitor_id, vital_value',
          params,
        ),
        sessions: await clickhouse.query(
          'SELECT session_id, sum(pageviews) AS pv, sum(events) AS n, max(end) AS end FROM sessions WHERE site_id = {s:UUID} GROUP BY session_id ORDER BY session_id',
          params,
        ),
      }
    }
    const json = await stored('JSONCompactEachRow')
    expect(json.events.length).toBe(rows.length)
    expect(await stored('Native')).toEqual(json)
    expect(await stored('RowBinary')).toEqual(json)
    expect(await stored('JSONEachRow')).toEqual(json)
    // what the pipeline repaired is stored repaired: U+FFFD for the lone surrogates
    const names = json.events.map((e) => (e as { name: string }).name)
    expect(names).toContain(`signup\ufffd${CONTROLS.replace(/[^\t\n\r]/g, '\ufffd')}`)
  })

  it('a retry of the same rows under the same token stores them once, in events and in the views', async () => {
    const clickhouse = await testClickHouse()
    const [row] = await pipedRows()
    for (const format of ['Native', 'RowBinary'] as const) {
      const siteId = crypto.randomUUID()
      const rows = Array.from({ length: 30 }, (_, i) => ({ ...row, site_id: siteId, session_id: String(i + 1), pathname: `/r/${i}` }))
      const token = crypto.randomUUID()
      clickhouse.insertFormat = format
      try {
        await clickhouse.insert(EVENTS_INPUT, rows, { token })
        await clickhouse.insert(EVENTS_INPUT, rows, { token, background: true })
      } finally {
        clickhouse.insertFormat = 'JSONCompactEachRow'
      }
      const count = async (table: string) =>
        Number((await clickhouse.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE site_id = {s:UUID}`, { s: siteId }))[0].n)
      expect(await count('events')).toBe(30)
      expect(await count('recent_events')).toBe(30)
      expect(await count('sessions')).toBe(30)
    }
  })
})
