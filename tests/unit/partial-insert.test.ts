import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createOrg } from '../../lib/accounts/admin'
import { Journal } from '../../lib/ingest/journal'
import { Ingestor } from '../../lib/ingest/pipeline'
import { BufferedSink } from '../../lib/ingest/sink'
import { SiteDirectory } from '../../lib/sites/site-directory'
import { newSite } from '../../lib/sites/sites'
import { collectLines, tempDir, testServices } from '../helpers'

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

/**
 * An insert that fails part-way, as one does when the disk fills: `events` and some of the views
 * fed from it are written, then one view's write fails (here a view of this test file's engine
 * that throws while a flag is set, as a full disk makes the engine throw NOT_ENOUGH_SPACE while
 * pushing to a view). The retry must store what is missing and nothing twice.
 */
describe('an insert of events that fails part-way', () => {
  it('is retried under the same token: every table holds each acknowledged row once', async () => {
    const services = await testServices()
    const { clickhouse } = services
    await clickhouse.command('CREATE TABLE IF NOT EXISTS fail_flag (x UInt8) ENGINE = Memory')
    await clickhouse.command('CREATE TABLE IF NOT EXISTS fail_sink (x UInt8) ENGINE = Null')
    await clickhouse.command(
      "CREATE MATERIALIZED VIEW IF NOT EXISTS fail_mv TO fail_sink AS SELECT throwIf((SELECT count() FROM fail_flag) > 0, 'no space (simulated)') AS x FROM events",
    )
    const org = await createOrg(services.repositories, 'Partial', new Date())
    const site = newSite({ domain: `partial-${crypto.randomUUID().slice(0, 8)}.example.com` }, org.id, new Date())
    await services.repositories.sites.create(site)
    const at = new Date(Date.now() - 3600_000).toISOString()
    const hits = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) =>
        JSON.stringify({
          timestamp: at,
          site: site.snippetId,
          name: 'pageview',
          url: `https://${site.domain}/p${from + i}`,
          ip: `203.0.113.${(from + i) % 50}`,
          userAgent: FIREFOX,
        }),
      )
    const dir = join(tempDir('partial'), 'journal')
    const { journal } = await Journal.open(dir, clickhouse, services.repositories)
    const sink = new BufferedSink(clickhouse, services.repositories, { intervalMs: 3_600_000, log: journal })
    const ingestor = new Ingestor({
      sites: new SiteDirectory(services.repositories.sites),
      repositories: services.repositories,
      sink,
      now: () => new Date(),
    })
    const count = async (table: string) =>
      Number((await clickhouse.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE site_id = {s:UUID}`, { s: site.id }))[0].n)
    const pageviews = async (table: string, column: string) =>
      Number(
        (
          await clickhouse.query<{ n: string }>(`SELECT toString(sum(${column})) AS n FROM ${table} WHERE site_id = {s:UUID}`, {
            s: site.id,
          })
        )[0].n,
      )

    expect((await collectLines(hits(0, 200), ingestor)).imported).toBe(200)
    await clickhouse.command('INSERT INTO fail_flag VALUES (1)')
    await expect(sink.flush()).rejects.toThrow(/no space \(simulated\)/)
    // part of it landed: the events table took its block before the view failed
    expect(await count('events')).toBe(200)
    // more hits are acknowledged while the failure lasts; the next flush fails again
    expect((await collectLines(hits(200, 50), ingestor)).imported).toBe(50)
    await expect(sink.flush()).rejects.toThrow(/no space/)

    await clickhouse.command('TRUNCATE TABLE fail_flag')
    await sink.flush() // the failed part, as it was
    await sink.flush() // what came meanwhile
    expect(await count('events')).toBe(250)
    expect(await count('recent_events')).toBe(250)
    // the views that count pageviews saw each row once
    expect(await pageviews('quarters', 'events')).toBe(250)
    expect(await pageviews('quarters', 'visit_events')).toBe(250)
    expect(await pageviews('sessions', 'pageviews')).toBe(250)
    expect((await services.repositories.usage.get(org.id, at.slice(0, 7))).pageview).toBe(250)
    // every segment is released: a restart stores nothing again
    expect((await Journal.open(dir, clickhouse, services.repositories)).replayed).toBe(0)
    expect(readdirSync(dir).filter((name) => name.endsWith('.log')).length).toBeLessThanOrEqual(2)
    await clickhouse.command('DROP VIEW fail_mv')
  })

  it('a flush whose hits fail to join their visits part-way goes on from the first hit without a row, and stores each once', async () => {
    const services = await testServices()
    const { clickhouse, repositories } = services
    const org = await createOrg(repositories, 'Resume', new Date())
    const site = newSite({ domain: `resume-${crypto.randomUUID().slice(0, 8)}.example.com` }, org.id, new Date())
    await repositories.sites.create(site)
    const start = Date.now() - 3600_000
    // 2,500 hits of 250 visitors, ten each a second apart: more than one part of a flush's rows
    const lines = Array.from({ length: 2500 }, (_, i) =>
      JSON.stringify({
        timestamp: new Date(start + Math.floor(i / 250) * 1000).toISOString(),
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/p${i % 7}`,
        ip: `198.51.100.${i % 250}`,
        userAgent: FIREFOX,
      }),
    )
    // the visits store fails once, on the second part's call
    let calls = 0
    const assignRuns = repositories.visits.assignRuns.bind(repositories.visits)
    const visits = Object.create(repositories.visits) as typeof repositories.visits
    visits.assignRuns = (...args: Parameters<typeof assignRuns>) => {
      if (++calls === 2) return Promise.reject(new Error('the visits store fell over'))
      return assignRuns(...args)
    }
    const sink = new BufferedSink(clickhouse, { usage: repositories.usage, visits }, { intervalMs: 3_600_000 })
    const ingestor = new Ingestor({
      sites: new SiteDirectory(repositories.sites),
      repositories,
      sink,
      now: () => new Date(),
      rowsInSink: true,
    })
    expect((await collectLines(lines, ingestor)).imported).toBe(2500)
    await expect(sink.flush()).rejects.toThrow(/the visits store fell over/)
    await sink.flush()
    expect(calls).toBe(4)
    const [stored] = await clickhouse.query<{ events: string; visitors: string; visits: string }>(
      'SELECT count() AS events, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits FROM events WHERE site_id = {s:UUID}',
      { s: site.id },
    )
    // every hit once; each visitor's ten hits, ten seconds in all, one visit
    expect(stored).toEqual({ events: '2500', visitors: '250', visits: '250' })
  })
})
