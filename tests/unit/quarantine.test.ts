import { readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createOrg } from '../../lib/accounts/admin'
import { Journal } from '../../lib/ingest/journal'
import { encode } from '../../lib/ingest/journal-line'
import { Ingestor } from '../../lib/ingest/pipeline'
import { insertSettingAside } from '../../lib/ingest/quarantine'
import { FileQuarantine } from '../../lib/ingest/quarantine-node'
import { collectorHealth, retryQuarantined } from '../../lib/ingest/recover'
import { BufferedSink, type IngestBatch, directSink } from '../../lib/ingest/sink'
import { eventRowsOf } from '../../lib/ingest/sessionize'
import type { RowHit } from '../../lib/ingest/item'
import type { EventRow } from '../../lib/ingest/rows'
import type { ClickHouse } from '../../lib/storage/clickhouse/types'
import { StoreUnavailableError } from '../../lib/storage/errors'
import { SiteDirectory } from '../../lib/sites/site-directory'
import { newSite } from '../../lib/sites/sites'
import { collectLines, tempDir, testServices } from '../helpers'

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

/** A site of its own, its hits' rows made through the pipeline (as the server's sink makes them), and counts of what is stored. */
async function fixture() {
  const services = await testServices()
  const org = await createOrg(services.repositories, 'Quarantine', new Date())
  const site = newSite({ domain: `q-${crypto.randomUUID().slice(0, 8)}.example.com` }, org.id, new Date())
  await services.repositories.sites.create(site)
  const at = new Date(Date.now() - 3600_000).toISOString()
  /** The journal's hits of `n` pageviews to /tag/i, as the server journals them (rows made where they are stored). */
  const hits = async (n: number, tag: string): Promise<RowHit[]> => {
    const taken: IngestBatch[] = []
    const ingestor = new Ingestor({
      sites: new SiteDirectory(services.repositories.sites),
      repositories: services.repositories,
      sink: { write: async (b) => void taken.push(b), flush: async () => {} },
      now: () => new Date(),
      rowsInSink: true,
    })
    const lines = Array.from({ length: n }, (_, i) =>
      JSON.stringify({
        timestamp: at,
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/${tag}/${i}`,
        ip: `203.0.113.${i % 200}`,
        userAgent: FIREFOX,
      }),
    )
    expect((await collectLines(lines, ingestor)).imported).toBe(n)
    return taken.flatMap((b) => b.hits)
  }
  const rows = async (n: number, tag: string): Promise<EventRow[]> => eventRowsOf(services.repositories.visits, await hits(n, tag))
  const stored = async (tag: string) =>
    Number(
      (
        await services.clickhouse.query<{ n: string }>(
          'SELECT count() AS n FROM events WHERE site_id = {s:UUID} AND startsWith(pathname, {p:String})',
          { s: site.id, p: `/${tag}/` },
        )
      )[0].n,
    )
  const storedNames = async (tag: string) =>
    (
      await services.clickhouse.query<{ name: string }>(
        'SELECT name FROM events WHERE site_id = {s:UUID} AND startsWith(pathname, {p:String}) ORDER BY name',
        { s: site.id, p: `/${tag}/` },
      )
    ).map((r) => r.name)
  return { services, site, hits, rows, stored, storedNames }
}

const LONE = '\ud800'

describe('rows the store refuses are set aside, and the rest of their batch is stored', () => {
  it('halves a batch down to its refused rows: 48 of 50 stored, 2 set aside each with the reason', async () => {
    const f = await fixture()
    const rows = await f.rows(50, 'halves')
    // made behind the door's checks, as a journal of an older version could hold them
    rows[7] = { ...rows[7], name: `x${LONE}` }
    rows[31] = { ...rows[31], timestamp: 'garbage' }
    const quarantine = new FileQuarantine(tempDir('quarantine'))
    const setAside = await insertSettingAside(f.services.clickhouse, 'events_input', rows, { token: crypto.randomUUID(), quarantine })
    expect(setAside).toBe(2)
    expect(await f.stored('halves')).toBe(48)
    const entries = quarantine.list()
    expect(entries.map((e) => [e.kind, e.table, e.count])).toEqual([
      ['rows', 'events_input', 1],
      ['rows', 'events_input', 1],
    ])
    const reasons = entries.map((e) => e.reason).join('\n')
    expect(reasons).toMatch(/surrogate/)
    expect(reasons).toMatch(/DateTime/)
    const held = entries.map((e) => quarantine.show(e.id)!).flatMap((e) => (e.kind === 'rows' ? e.rows : []))
    expect(held.map((r) => (r as EventRow).pathname).sort()).toEqual([rows[7].pathname, rows[31].pathname].sort())
  })

  it('a retried flush sets a row aside once and stores the rest once (same tokens)', async () => {
    const f = await fixture()
    const rows = await f.rows(10, 'twice')
    rows[3] = { ...rows[3], name: `y${LONE}` }
    const quarantine = new FileQuarantine(tempDir('quarantine'))
    const token = crypto.randomUUID()
    for (let i = 0; i < 2; i++) await insertSettingAside(f.services.clickhouse, 'events_input', rows, { token, quarantine })
    expect(await f.stored('twice')).toBe(9)
    expect(quarantine.count()).toBe(1)
  })

  it('an outage is not a refusal: nothing is set aside and the insert fails for a retry', async () => {
    const quarantine = new FileQuarantine(tempDir('quarantine'))
    const down = { insert: async () => Promise.reject(new StoreUnavailableError('ClickHouse')) } as unknown as ClickHouse
    await expect(insertSettingAside(down, 'events_input', [{}, {}], { token: 't', quarantine })).rejects.toThrow(StoreUnavailableError)
    expect(quarantine.count()).toBe(0)
  })

  it('where a hit is stored before its answer (Workers), a refused row is a 400 to its sender, not a 500', async () => {
    const f = await fixture()
    const [row] = await f.rows(1, 'direct')
    const sink = directSink(f.services.clickhouse, f.services.repositories)
    const refused = sink.write({ events: [{ ...row, timestamp: 'garbage' }], hits: [], bots: [], usage: new Map() })
    await expect(refused).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/^body: the store refused a value/) })
    expect(await f.stored('direct')).toBe(0)
  })

  it("the server's sink stores the rest of a flush, sets the refused row aside, and goes on with later hits", async () => {
    const f = await fixture()
    const quarantine = new FileQuarantine(tempDir('quarantine'))
    const sink = new BufferedSink(f.services.clickhouse, f.services.repositories, { intervalMs: 3_600_000, quarantine })
    const first = await f.rows(20, 'sink')
    first[0] = { ...first[0], name: `z${LONE}` }
    await sink.write({ events: first, hits: [], bots: [], usage: new Map() })
    await sink.flush()
    expect(sink.backlog.rows).toBe(0)
    expect(sink.lastError).toBeNull()
    expect(await f.stored('sink')).toBe(19)
    expect(quarantine.count()).toBe(1)
    await sink.write({ events: [], hits: await f.hits(5, 'after'), bots: [], usage: new Map() })
    await sink.flush()
    expect(await f.stored('after')).toBe(5)
    await sink.close()
  })
})

describe('the journal replay never stops on a line', () => {
  it('sets aside lines of the wrong shape, hits with wrong values and unreadable lines, and stores every good row', async () => {
    const f = await fixture()
    const dir = join(tempDir('journal'), 'journal')
    const quarantine = new FileQuarantine(tempDir('quarantine'))
    const good = await f.hits(12, 'replay')
    const bad = (await f.hits(1, 'badat'))[0]
    const surrogate = (await f.hits(1, 'lone'))[0]
    const batch = (hits: RowHit[]): IngestBatch => ({ events: [], hits, bots: [], usage: new Map() })
    const lines = [
      encode(batch(good.slice(0, 6))),
      '[1,2,3]\n',
      encode(batch([{ ...bad, at: 'garbage' as unknown as number }])),
      '\u0007\u00ff not json at all\n',
      // written by a version that did not repair text: JSON.stringify keeps the lone surrogate as an escape
      encode(batch([{ ...surrogate, hit: { ...surrogate.hit, name: `lone${LONE}` } }])),
      encode(batch(good.slice(6))),
      // a torn tail: a write that never returned, never acknowledged
      '[[["site_id"],[["',
    ]
    Journal.create(dir, quarantine).close()
    writeFileSync(join(dir, '1.log'), lines.join(''))
    const { replayed } = await Journal.open(dir, f.services.clickhouse, f.services.repositories, quarantine)
    expect(replayed).toBe(13)
    expect(await f.stored('replay')).toBe(12)
    expect(await f.storedNames('lone')).toEqual(['lone\ufffd'])
    expect(await f.stored('badat')).toBe(0)
    expect(readdirSync(dir).filter((n) => n === '1.log')).toEqual([])
    const entries = quarantine.list()
    expect(entries.map((e) => e.kind).sort()).toEqual(['hits', 'line', 'line'])
    expect(entries.find((e) => e.kind === 'hits')?.reason).toMatch(/at is not a time/)
    expect(
      entries
        .filter((e) => e.kind === 'line')
        .map((e) => e.reason)
        .sort(),
    ).toEqual(['not a journal line: a table of rows is malformed', 'not valid JSON'])
  })

  it('an entry handed back is stored with its text repaired and leaves the quarantine', async () => {
    const f = await fixture()
    const quarantine = new FileQuarantine(tempDir('quarantine'))
    const rows = await f.rows(1, 'retry')
    quarantine.setAside('lone-row', { kind: 'rows', table: 'events_input', rows: [{ ...rows[0], name: `r${LONE}` }] }, 'refused')
    const hits = await f.hits(1, 'retryat')
    quarantine.setAside('bad-hit', { kind: 'hits', hits: [{ ...hits[0], at: 'never' as unknown as number }] }, 'refused')
    expect(quarantine.retry('lone-row')).toBe(true)
    expect(quarantine.retry('bad-hit')).toBe(true)
    expect(quarantine.retry('no-such-entry')).toBe(false)
    expect(await retryQuarantined(f.services.clickhouse, f.services.repositories, quarantine)).toBe(1)
    expect(await f.storedNames('retry')).toEqual(['r\ufffd'])
    // refused again: back in the quarantine under its id, its retries counted
    const [again] = quarantine.list()
    expect(quarantine.list()).toHaveLength(1)
    expect([again.id.startsWith('bad-hit.r1.'), again.retries, again.retrying]).toEqual([true, 1, false])
    // a second pass finds nothing to take: the entry it settled is gone from the retry list
    expect(await retryQuarantined(f.services.clickhouse, f.services.repositories, quarantine)).toBe(0)
    expect(quarantine.drop(again.id)).toBe(true)
    expect(quarantine.count()).toBe(0)
  })
})

describe('handing back', () => {
  it('two passes at once store a handed-back entry once', async () => {
    const f = await fixture()
    const quarantine = new FileQuarantine(tempDir('quarantine'))
    const [row] = await f.rows(1, 'twopass')
    quarantine.setAside('one-row', { kind: 'rows', table: 'events_input', rows: [row] }, 'refused')
    quarantine.retry('one-row')
    const passes = await Promise.all([1, 2].map(() => retryQuarantined(f.services.clickhouse, f.services.repositories, quarantine)))
    expect(passes.sort()).toEqual([0, 1])
    expect(await f.stored('twopass')).toBe(1)
    expect(quarantine.count()).toBe(0)
  })
})

describe("the collector's health", () => {
  it('is stalled once an acknowledged row has waited over a minute, with the last error', async () => {
    const down = { insert: async () => Promise.reject(new StoreUnavailableError('ClickHouse')) } as unknown as ClickHouse
    const f = await fixture()
    const quarantine = new FileQuarantine(tempDir('quarantine'))
    const sink = new BufferedSink(down, f.services.repositories, { intervalMs: 3_600_000, quarantine })
    await sink.write({ events: await f.rows(3, 'stall'), hits: [], bots: [], usage: new Map() })
    await expect(sink.flush()).rejects.toThrow(StoreUnavailableError)
    const now = Date.now()
    const fresh = collectorHealth(sink, quarantine, null, now)
    expect(fresh).toMatchObject({ status: 'ok', pendingRows: 3, quarantined: 0 })
    expect(fresh.lastInsertError?.message).toMatch(/ClickHouse is unavailable/)
    const later = collectorHealth(sink, quarantine, null, now + 61_000)
    expect(later.status).toBe('stalled')
    expect(later.oldestPendingSeconds).toBeGreaterThan(60)
    // a replay that is only long is not a stall; one that fails for over a minute is
    expect(
      collectorHealth({ backlog: { rows: 0, oldestAt: null }, lastError: null }, quarantine, { since: now - 90_000 }, now).status,
    ).toBe('ok')
    const idle = { backlog: { rows: 0, oldestAt: null }, lastError: null }
    expect(collectorHealth(idle, quarantine, { since: now - 90_000, error: { at: now, message: 'boom' } }, now)).toMatchObject({
      status: 'stalled',
      lastInsertError: { message: 'boom' },
    })
    expect(collectorHealth(idle, quarantine, null, now).status).toBe('ok')
  })
})
