import { describe, expect, it } from 'vitest'
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { createOrg } from '../../lib/accounts/admin'
import { Journal } from '../../lib/ingest/journal'
import { Ingestor } from '../../lib/ingest/pipeline'
import type { RowHit } from '../../lib/ingest/item'
import { botRow } from '../../lib/ingest/rows'
import { BufferedSink } from '../../lib/ingest/sink'
import { eventRowsOf } from '../../lib/ingest/sessionize'
import type { ClickHouse } from '../../lib/storage/clickhouse/types'
import { SiteDirectory } from '../../lib/sites/site-directory'
import { newSite } from '../../lib/sites/sites'
import { collectLines, tempDir, testServices } from '../helpers'

const GPTBOT = 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)'
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

/** A site whose rows this test alone writes, and hits for it: `humans` pageviews and `bots` crawler hits (kept: includeBots). */
async function fixture() {
  const services = await testServices()
  const org = await createOrg(services.repositories, 'Journal', new Date())
  const site = newSite({ domain: `journal-${crypto.randomUUID().slice(0, 8)}.example.com` }, org.id, new Date())
  site.tracking.includeBots = true
  await services.repositories.sites.create(site)
  const at = new Date(Date.now() - 3600_000).toISOString()
  const lines = (humans: number, bots: number) => [
    ...Array.from({ length: humans }, (_, i) =>
      JSON.stringify({
        timestamp: at,
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/p${i}`,
        ip: '203.0.113.7',
        userAgent: FIREFOX,
      }),
    ),
    ...Array.from({ length: bots }, (_, i) =>
      JSON.stringify({
        timestamp: at,
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/b${i}`,
        ip: '203.0.113.8',
        userAgent: GPTBOT,
      }),
    ),
  ]
  const count = async (table: string) =>
    Number(
      (await services.clickhouse.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE site_id = {s:UUID}`, { s: site.id }))[0].n,
    )
  const usage = async () => (await services.repositories.usage.get(org.id, at.slice(0, 7))).pageview ?? 0
  return { services, site, lines, count, usage }
}

/** A process that journals hits and dies before its sink inserts them (no flush, no close). */
async function journalAndCrash(dir: string, clickhouse: ClickHouse, f: Awaited<ReturnType<typeof fixture>>, humans: number, bots: number) {
  const { journal } = await Journal.open(dir, clickhouse, f.services.repositories)
  const sink = new BufferedSink(clickhouse, f.services.repositories, { intervalMs: 3_600_000, log: journal })
  const ingestor = new Ingestor({
    sites: new SiteDirectory(f.services.repositories.sites),
    repositories: f.services.repositories,
    sink,
    now: () => new Date(),
    // as the server journals its live hits: visits and rows are made where they are stored
    rowsInSink: true,
  })
  // collected live: usage counts these rows
  const result = await collectLines(f.lines(humans, bots), ingestor)
  expect(result.imported).toBe(humans + bots)
  return sink
}

/** Makes the rows of every hit journaled in `dir` (their visits assigned in the store) and inserts them, as a flush the engine took would have. */
async function insertJournaledRows(dir: string, f: Awaited<ReturnType<typeof fixture>>) {
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.log'))) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean)) {
      // a line holds the hits as one list of columns and each hit's values
      const [columns, hits] = JSON.parse(line)[3] as [string[], unknown[][]]
      const rows = await eventRowsOf(
        f.services.repositories.visits,
        hits.map((values) => Object.fromEntries(columns.map((c, i) => [c, values[i]])) as unknown as RowHit),
      )
      await f.services.clickhouse.insert('events_input', rows)
    }
  }
}

describe('the write-ahead journal', () => {
  it('stores at the next start every row journaled and never inserted, once', async () => {
    const f = await fixture()
    const dir = join(tempDir('journal'), 'journal')
    await journalAndCrash(dir, f.services.clickhouse, f, 50, 5)
    expect(await f.count('events')).toBe(0)
    const { replayed } = await Journal.open(dir, f.services.clickhouse, f.services.repositories)
    expect(replayed).toBe(55)
    expect(await f.count('events')).toBe(50)
    expect(await f.count('bot_events')).toBe(5)
    expect(await f.usage()).toBe(50)
    // replayed segments are gone: a second start stores nothing again
    expect((await Journal.open(dir, f.services.clickhouse, f.services.repositories)).replayed).toBe(0)
    expect(await f.count('events')).toBe(50)
  })

  it("keeps each hit's visitor id and never the client's address", async () => {
    const f = await fixture()
    const dir = join(tempDir('journal'), 'journal')
    await journalAndCrash(dir, f.services.clickhouse, f, 3, 1)
    const text = readdirSync(dir)
      .filter((name) => name.endsWith('.log'))
      .map((name) => readFileSync(join(dir, name), 'utf8'))
      .join('')
    // the fixture's hits come from 203.0.113.7 (people) and 203.0.113.8 (a crawler)
    expect(text).not.toContain('203.0.113')
    const [columns, hits] = JSON.parse(text.split('\n')[0])[3] as [string[], unknown[][]]
    expect(hits).toHaveLength(3)
    // one visitor: the same address and user agent on one day
    const visitors = new Set(hits.map((h) => h[columns.indexOf('visitorId')]))
    expect(visitors.size).toBe(1)
    expect([...visitors][0]).toMatch(/^\d+$/)
  })

  it('a crash between the steps of a flush replays only the steps not stored', async () => {
    const f = await fixture()
    const dir = join(tempDir('journal'), 'journal')
    // the bot insert fails once the events are in: the bots and the usage are requeued
    const failingBots: ClickHouse = {
      ...f.services.clickhouse,
      query: f.services.clickhouse.query.bind(f.services.clickhouse),
      command: f.services.clickhouse.command.bind(f.services.clickhouse),
      close: async () => {},
      insert: async (table, rows) =>
        table === 'bot_events' && rows.length ? Promise.reject(new Error('bot insert failed')) : f.services.clickhouse.insert(table, rows),
    }
    const sink = await journalAndCrash(dir, failingBots, f, 20, 3)
    await expect(sink.flush()).rejects.toThrow(/bot insert failed/)
    expect(await f.count('events')).toBe(20)
    expect(await f.count('bot_events')).toBe(0)
    // the stored events are not marked: the replay finds them in the table
    expect(readdirSync(dir).some((name) => name.endsWith('.done'))).toBe(false)
    // the process dies here; the next start stores the bots and the usage, not the events again
    await Journal.open(dir, f.services.clickhouse, f.services.repositories)
    expect(await f.count('events')).toBe(20)
    expect(await f.count('bot_events')).toBe(3)
    expect(await f.usage()).toBe(20)
  })

  it('each append is in the file when it is acknowledged, a line of its own, and is replayed', async () => {
    const f = await fixture()
    const dir = join(tempDir('journal'), 'journal')
    const { journal } = await Journal.open(dir, f.services.clickhouse, f.services.repositories)
    const at = Date.now() - 3600_000
    const batches = Array.from({ length: 40 }, (_, i) => ({
      events: [],
      hits: [],
      bots: [
        botRow({
          siteId: f.site.id,
          at: at + i,
          bot: { name: 'GPTBot', kind: 'ai-training' },
          verified: false,
          source: 'server',
          hostname: f.site.domain,
          pathname: `/g${i}`,
          referrer: null,
          userAgent: GPTBOT,
          countryCode: undefined,
        }),
      ],
      usage: new Map(),
    }))
    const linesNow = () =>
      readdirSync(dir)
        .filter((name) => name.endsWith('.log'))
        .flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean))
    // read as each is acknowledged: a process killed then finds it in the file
    for (const [i, batch] of batches.entries()) {
      await journal.append(batch)
      expect(linesNow()).toHaveLength(i + 1)
    }
    const pathnames = linesNow().map((line) => {
      const [columns, rows] = JSON.parse(line)[1] as [string[], unknown[][]]
      return rows.map((row) => row[columns.indexOf('pathname')])
    })
    expect(pathnames).toEqual(batches.map((_, i) => [`/g${i}`]))
    expect((await Journal.open(dir, f.services.clickhouse, f.services.repositories)).replayed).toBe(40)
    expect(await f.count('bot_events')).toBe(40)
  })

  it('a flush that stores everything releases its segments', async () => {
    const f = await fixture()
    const dir = join(tempDir('journal'), 'journal')
    const sink = await journalAndCrash(dir, f.services.clickhouse, f, 10, 0)
    await sink.flush()
    expect(readdirSync(dir).filter((name) => name.endsWith('.log'))).toHaveLength(1) // the new, empty segment
    expect((await Journal.open(dir, f.services.clickhouse, f.services.repositories)).replayed).toBe(0)
    expect(await f.count('events')).toBe(10)
  })

  it('rows the engine took just before the crash, unmarked, are not stored again', async () => {
    const f = await fixture()
    const dir = join(tempDir('journal'), 'journal')
    await journalAndCrash(dir, f.services.clickhouse, f, 30, 2)
    // a flush made the hits' rows (their visits assigned in the store), the engine took them, and
    // the process died before releasing the segment: the replay makes the same rows again
    await insertJournaledRows(dir, f)
    expect(await f.count('events')).toBe(30)
    const { replayed } = await Journal.open(dir, f.services.clickhouse, f.services.repositories)
    expect(replayed).toBe(2)
    expect(await f.count('events')).toBe(30)
    expect(await f.count('bot_events')).toBe(2)
  })
  it('rows stored before the crash are not stored again when the replay comes after their visits expired', async () => {
    const f = await fixture()
    const dir = join(tempDir('journal'), 'journal')
    await journalAndCrash(dir, f.services.clickhouse, f, 12, 0)
    await insertJournaledRows(dir, f)
    expect(await f.count('events')).toBe(12)
    // the process stays down past the visits' expiry: the store no longer holds them, so the
    // replay's rows get other session ids
    const afterExpiry = (await testServices()).repositories.visits
    const { replayed } = await Journal.open(dir, f.services.clickhouse, { usage: f.services.repositories.usage, visits: afterExpiry })
    expect(replayed).toBe(0)
    expect(await f.count('events')).toBe(12)
    const sessions = await f.services.clickhouse.query<{ n: string }>(
      'SELECT uniqExact(session_id) AS n FROM events WHERE site_id = {s:UUID}',
      { s: f.site.id },
    )
    expect(Number(sessions[0].n)).toBe(1)
  })
})
