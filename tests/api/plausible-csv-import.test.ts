import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Zip, ZipPassThrough, strToU8, zipSync } from 'fflate'
import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { importPlausibleZip, readPlausibleFile } from '../../lib/plausible/csv-import-node'
import { newSite } from '../../lib/sites/sites'
import { checkedApp, client, tempDir, testServices } from '../helpers'
import { importedRowsOf } from '../imported-rows'
import { email, ORIGIN, webHarness } from './web-harness'

/**
 * A Plausible CSV export imported through the command's path and the upload, read back with
 * Stats API v2 `include.imports`. The export is written here from planted visits as Plausible's
 * exporter writes it (one row per day and value), and every expected number is computed here
 * from the visits with Plausible's definitions: imported visitors are the days' visitors added
 * up, bounce rate the bounces over the visits, visit duration the seconds over the visits.
 */

const NOW = new Date('2026-11-22T15:00:00Z')
const DOMAIN = 'moved.plausible.test'
const UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

/** Tracked visits, the first on 2026-11-20: 3 visitors, 3 visits, 4 pageviews, 2 bounces, 120 s. */
const TRACKED = [
  {
    ip: '8.8.8.8',
    referrer: '',
    views: [
      ['2026-11-20T10:00:00Z', '/a'],
      ['2026-11-20T10:02:00Z', '/b'],
    ],
  },
  { ip: '1.1.1.1', referrer: '', views: [['2026-11-21T09:00:00Z', '/']] },
  { ip: '81.2.69.142', referrer: 'https://www.google.com/', views: [['2026-11-21T11:00:00Z', '/a']] },
] as const
const TRACKED_TOTALS = { visitors: 3, visits: 3, pageviews: 4, bounces: 2, seconds: 120 }
const TRACKED_SOURCES: Record<string, number> = { 'Direct / None': 2, Google: 1 }
const TRACKED_PAGES: Record<string, { visitors: number; pageviews: number }> = {
  '/a': { visitors: 2, pageviews: 2 },
  '/b': { visitors: 1, pageviews: 1 },
  '/': { visitors: 1, pageviews: 1 },
}

/** A visit Plausible recorded; a bounce is a visit of one pageview. */
interface Visit {
  user: string
  date: string
  source: string
  pages: string[]
  seconds: number
  country: string
  region: string
  device: string
  browser: [string, string]
  os: [string, string]
  events?: string[]
}

const v = (user: string, date: string, source: string, pages: string[], seconds: number, more: Partial<Visit> = {}): Visit => ({
  user,
  date,
  source,
  pages,
  seconds,
  country: 'DE',
  region: 'DE-BE',
  device: 'Desktop',
  browser: ['Chrome', '131.0'],
  os: ['Windows', '10'],
  ...more,
})

/** The first export: 2026-11-15 to 2026-11-20 (2026-11-20 is tracked too, so its imported visits never count). */
const FIRST: Visit[] = [
  v('u1', '2026-11-15', 'Google', ['/', '/a'], 40, { events: ['Signup'] }),
  v('u2', '2026-11-15', '', ['/'], 0, {
    country: 'US',
    region: 'US-CA',
    device: 'Mobile',
    browser: ['Safari', '18.1'],
    os: ['iOS', '18.1'],
  }),
  v('u1', '2026-11-16', 'Google', ['/a'], 0, { browser: ['Chrome', '130.0'] }),
  v('u1', '2026-11-16', 'Newsletter', ['/c', '/a', '/a'], 200, { events: ['Signup', 'Download'] }),
  v('u3', '2026-11-16', '', ['/'], 5, { device: 'Laptop', country: 'FR', region: 'FR-IDF', os: ['Mac', '14'] }),
  v('u4', '2026-11-17', 'Newsletter', ['/c'], 0, { device: 'Tablet', browser: ['Firefox', '133.0'], os: ['Android', '15'] }),
  v('u5', '2026-11-17', 'Google', ['/a', '/b'], 75, { browser: ['Chrome', '130.0'] }),
  v('u5', '2026-11-17', 'Google', ['/b'], 0, { browser: ['Chrome', '131.0'] }),
  v('u6', '2026-11-19', 'DuckDuckGo', ['/', '/a', '/b'], 310, { country: 'US', region: 'US-NY' }),
  v('u7', '2026-11-20', 'Google', ['/a', '/b'], 900),
  v('u8', '2026-11-20', '', ['/'], 0),
]
/** The second export, which replaces the first: fewer days, other visits. */
const SECOND: Visit[] = [
  v('w1', '2026-11-17', 'Bing', ['/x'], 0),
  v('w2', '2026-11-18', 'Bing', ['/x', '/y'], 60, { country: 'IT', region: 'IT-25' }),
  v('w3', '2026-11-18', '', ['/'], 0),
]

interface Sums {
  visitors: number
  visits: number
  pageviews: number
  bounces: number
  seconds: number
}
const zero = (): Sums => ({ visitors: 0, visits: 0, pageviews: 0, bounces: 0, seconds: 0 })
const bounce = (x: Visit) => (x.pages.length === 1 ? 1 : 0)

/** Sums of visits grouped by day and `key` (Plausible's rows): visitors are each group's distinct users. */
function grouped(visits: Visit[], key: (x: Visit) => string[]) {
  const groups = new Map<string, Visit[]>()
  for (const x of visits) {
    const k = JSON.stringify([x.date, ...key(x)])
    groups.set(k, [...(groups.get(k) ?? []), x])
  }
  return [...groups].map(([k, group]) => {
    const [date, ...values] = JSON.parse(k) as string[]
    const sums: Sums = {
      visitors: new Set(group.map((x) => x.user)).size,
      visits: group.length,
      pageviews: group.reduce((n, x) => n + x.pages.length, 0),
      bounces: group.reduce((n, x) => n + bounce(x), 0),
      seconds: group.reduce((n, x) => n + x.seconds, 0),
    }
    return { date, values, sums }
  })
}

const csv = (header: string, rows: (string | number)[][]) =>
  `${header}\r\n${rows.map((r) => r.map((c) => (/[",]/.test(String(c)) ? `"${String(c).replace(/"/g, '""')}"` : c)).join(',')).join('\r\n')}\r\n`

/** Plausible's export files of the visits, as its exporter writes them (rows in date order). */
function exportFiles(visits: Visit[]): Record<string, string> {
  const days = visits.map((x) => x.date).sort()
  const suffix = `_${days[0].replace(/-/g, '')}_${days.at(-1)!.replace(/-/g, '')}.csv`
  const byDay = <T extends { date: string }>(rows: T[]) => rows.sort((a, b) => a.date.localeCompare(b.date))
  const session = (key: (x: Visit) => string[]) =>
    byDay(grouped(visits, key)).map(({ date, values, sums: s }) => [
      date,
      ...values,
      s.visitors,
      s.visits,
      s.seconds,
      s.bounces,
      s.pageviews,
    ])
  const pages = byDay(
    visits.flatMap((x) => [...new Set(x.pages)].map((page) => ({ ...x, page, views: x.pages.filter((p) => p === page).length }))),
  )
  const pageRows = new Map<string, { date: string; page: string; users: Set<string>; visits: number; pageviews: number }>()
  for (const p of pages) {
    const k = `${p.date} ${p.page}`
    const row = pageRows.get(k) ?? { date: p.date, page: p.page, users: new Set<string>(), visits: 0, pageviews: 0 }
    row.users.add(p.user)
    row.visits++
    row.pageviews += p.views
    pageRows.set(k, row)
  }
  const events = byDay(visits.flatMap((x) => (x.events ?? []).map((name) => ({ date: x.date, name, user: x.user }))))
  const eventRows = new Map<string, { date: string; name: string; users: Set<string>; count: number }>()
  for (const e of events) {
    const row = eventRows.get(`${e.date} ${e.name}`) ?? { date: e.date, name: e.name, users: new Set<string>(), count: 0 }
    row.users.add(e.user)
    row.count++
    eventRows.set(`${e.date} ${e.name}`, row)
  }
  return {
    [`imported_visitors${suffix}`]: csv(
      'date,visitors,pageviews,bounces,visits,visit_duration',
      byDay(grouped(visits, () => [])).map(({ date, sums: s }) => [date, s.visitors, s.pageviews, s.bounces, s.visits, s.seconds]),
    ),
    [`imported_sources${suffix}`]: csv(
      'date,source,referrer,utm_source,utm_medium,utm_campaign,utm_content,utm_term,pageviews,visitors,visits,visit_duration,bounces',
      byDay(grouped(visits, (x) => [x.source])).map(({ date, values: [source], sums: s }) => [
        date,
        source,
        '',
        '',
        '',
        '',
        '',
        '',
        s.pageviews,
        s.visitors,
        s.visits,
        s.seconds,
        s.bounces,
      ]),
    ),
    [`imported_pages${suffix}`]: csv(
      'date,hostname,page,visits,visitors,pageviews,total_scroll_depth,total_scroll_depth_visits',
      [...pageRows.values()].map((r) => [r.date, DOMAIN, r.page, r.visits, r.users.size, r.pageviews, '', '']),
    ),
    [`imported_entry_pages${suffix}`]: csv(
      'date,entry_page,visitors,entrances,visit_duration,bounces,pageviews',
      byDay(grouped(visits, (x) => [x.pages[0]])).map(({ date, values: [p], sums: s }) => [
        date,
        p,
        s.visitors,
        s.visits,
        s.seconds,
        s.bounces,
        s.pageviews,
      ]),
    ),
    [`imported_exit_pages${suffix}`]: csv(
      'date,exit_page,visitors,visit_duration,exits,bounces,pageviews',
      byDay(grouped(visits, (x) => [x.pages.at(-1)!])).map(({ date, values: [p], sums: s }) => [
        date,
        p,
        s.visitors,
        s.seconds,
        s.visits,
        s.bounces,
        s.pageviews,
      ]),
    ),
    [`imported_custom_events${suffix}`]: csv(
      'date,name,link_url,path,visitors,events',
      [...eventRows.values()].map((r) => [r.date, r.name, '', '', r.users.size, r.count]),
    ),
    [`imported_locations${suffix}`]: csv(
      'date,country,region,city,visitors,visits,visit_duration,bounces,pageviews',
      session((x) => [x.country, x.region, '0']),
    ),
    [`imported_devices${suffix}`]: csv(
      'date,device,visitors,visits,visit_duration,bounces,pageviews',
      session((x) => [x.device]),
    ),
    [`imported_browsers${suffix}`]: csv(
      'date,browser,browser_version,visitors,visits,visit_duration,bounces,pageviews',
      session((x) => x.browser),
    ),
    [`imported_operating_systems${suffix}`]: csv(
      'date,operating_system,operating_system_version,visitors,visits,visit_duration,bounces,pageviews',
      session((x) => x.os),
    ),
  }
}

/** A zip as Plausible's exporter streams it: files stored, their sizes after their data. */
function streamedZip(files: Record<string, string | Uint8Array>) {
  const parts: Uint8Array[] = []
  const zip = new Zip((err, chunk) => {
    if (err) throw err
    parts.push(chunk)
  })
  for (const [name, content] of Object.entries(files)) {
    const file = new ZipPassThrough(name)
    zip.add(file)
    file.push(typeof content === 'string' ? strToU8(content) : content, true)
  }
  zip.end()
  return Buffer.concat(parts)
}
const deflatedZip = (files: Record<string, string | Uint8Array>) =>
  zipSync(Object.fromEntries(Object.entries(files).map(([n, c]) => [n, typeof c === 'string' ? strToU8(c) : c])))

/** The visits that count: before the first tracked day (2026-11-20), within [from, to]. */
const counted = (visits: Visit[], from: string, to: string) => visits.filter((x) => x.date < '2026-11-20' && x.date >= from && x.date <= to)

/** Sums over days (visitors: each day's and value's distinct users, added up), by the value `key` gives. */
function byValue(visits: Visit[], key: (x: Visit) => string, fine: (x: Visit) => string[] = (x) => [key(x)]) {
  const out = new Map<string, Sums>()
  for (const { values, sums } of grouped(visits, (x) => [key(x), ...fine(x)])) {
    const row = out.get(values[0]) ?? zero()
    for (const k of Object.keys(row) as (keyof Sums)[]) row[k] += sums[k]
    out.set(values[0], row)
  }
  return out
}
const total = (visits: Visit[]) => byValue(visits, () => '').get('') ?? zero()
const plus = (a: Sums, b: Sums): Sums => ({
  visitors: a.visitors + b.visitors,
  visits: a.visits + b.visits,
  pageviews: a.pageviews + b.pageviews,
  bounces: a.bounces + b.bounces,
  seconds: a.seconds + b.seconds,
})
/** visitors, visits, pageviews, bounce_rate, visit_duration as Plausible defines them. */
const metricsOf = (s: Sums) => [
  s.visitors,
  s.visits,
  s.pageviews,
  s.visits ? Math.round((s.bounces / s.visits) * 100) : 0,
  s.visits ? Math.round(s.seconds / s.visits) : 0,
]
const METRICS = ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration']
/** Breakdown rows as Plausible orders them: most visitors first, then by value. */
const rowsOf = (rows: Map<string, Sums>) =>
  [...rows]
    .sort(([a, x], [b, y]) => y.visitors - x.visitors || (a < b ? -1 : 1))
    .map(([value, s]) => ({ dimensions: [value], metrics: metricsOf(s) }))

describe('a Plausible CSV export imported', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let app: ReturnType<typeof checkedApp>
  let readKey = ''
  let writeKey = ''
  let site: ReturnType<typeof newSite>
  const dir = tempDir('plausible-export')

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    app = checkedApp(services)
    const org = await createOrg(services.repositories, 'Moved', NOW)
    readKey = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    writeKey = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, NOW)).key
    site = newSite({ domain: DOMAIN, timezone: 'UTC' }, org.id, NOW)
    await services.repositories.sites.create(site)
    const lines = TRACKED.flatMap((t) =>
      t.views.map(([timestamp, path], i) =>
        JSON.stringify({
          timestamp,
          site: site.snippetId,
          name: 'pageview',
          url: `https://${DOMAIN}${path}`,
          referrer: i === 0 && t.referrer ? t.referrer : undefined,
          ip: t.ip,
          userAgent: UA,
        }),
      ),
    )
    expect((await importHits(lines, services.ingestor)).rejected).toBe(0)
  })

  const query = async (body: Record<string, unknown>, domain = DOMAIN) => {
    const res = await call('POST', '/api/v2/query', { key: readKey, body: { site_id: domain, ...body } })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }
  const upload = async (zip: Uint8Array, siteId = site.id) => {
    const res = await app.request(`${ORIGIN}/api/v1/sites/${siteId}/imports/plausible`, {
      method: 'POST',
      headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/zip' },
      body: new Uint8Array(zip),
    })
    return { status: res.status, json: await res.json() }
  }
  const written = (zip: Uint8Array) => {
    const file = join(dir, `${crypto.randomUUID()}.zip`)
    writeFileSync(file, zip)
    return file
  }
  /** What the command does: the file read and checked, then imported. */
  const viaCommand = async (zip: Uint8Array, ref = site.id) => importPlausibleZip(services, await readPlausibleFile(written(zip)), ref)
  const breakdown = async (dimension: string, date_range: unknown) =>
    (await query({ metrics: METRICS, date_range, dimensions: [dimension], include: { imports: true } })).results

  it("through the command's path: listed among the imports, added before the first tracked day and only there", async () => {
    const result = await viaCommand(streamedZip(exportFiles(FIRST)))
    expect(result).toMatchObject({ from: '2026-11-15', to: '2026-11-20' })
    expect(result.files).toHaveLength(10)
    const imports = (await call('GET', `/api/v1/sites/${site.id}/imports`, { key: readKey })).json.imports
    expect(imports).toEqual([expect.objectContaining({ kind: 'plausible', state: 'completed', from: '2026-11-15', to: '2026-11-20' })])

    const all = await query({ metrics: METRICS, date_range: '7d', include: { imports: true } })
    expect(all.results).toEqual([
      { metrics: metricsOf(plus(TRACKED_TOTALS, total(counted(FIRST, '2026-11-16', '2026-11-22')))), dimensions: [] },
    ])
    expect(all.meta.imports_included).toBe(true)
    const without = await query({ metrics: METRICS, date_range: '7d' })
    expect(without.results).toEqual([{ metrics: metricsOf(TRACKED_TOTALS), dimensions: [] }])

    const since = await query({ metrics: ['visitors'], date_range: 'all', include: { imports: true } })
    expect(since.query.date_range[0]).toMatch(/^2026-11-15T00:00:00/)
    expect(since.results[0].metrics).toEqual([TRACKED_TOTALS.visitors + total(counted(FIRST, '2026-11-01', '2026-11-22')).visitors])
  })

  it('each day adds its imported numbers; a tracked day keeps its own (never counted twice)', async () => {
    const json = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: ['2026-11-15', '2026-11-21'],
      dimensions: ['time:day'],
      include: { imports: true },
    })
    const tracked: Record<string, [number, number]> = { '2026-11-20': [1, 2], '2026-11-21': [2, 2] }
    const days = ['2026-11-15', '2026-11-16', '2026-11-17', '2026-11-19', '2026-11-20', '2026-11-21']
    expect(json.results).toEqual(
      days.map((day) => {
        const imported = total(counted(FIRST, day, day))
        const [visitors, pageviews] = tracked[day] ?? [0, 0]
        return { dimensions: [day], metrics: [visitors + imported.visitors, pageviews + imported.pageviews] }
      }),
    )
  })

  it('breakdowns by source and page merge with the tracked rows; by country, device, browser and os they take the export', async () => {
    const visits = counted(FIRST, '2026-11-16', '2026-11-22')
    const sources = byValue(visits, (x) => x.source || 'Direct / None')
    // the tracked visits: one bounce from each source
    for (const [name, n] of Object.entries(TRACKED_SOURCES))
      sources.set(name, plus(sources.get(name) ?? zero(), { visitors: n, visits: n, pageviews: 0, bounces: 1, seconds: 0 }))
    const bySource = await query({
      metrics: ['visitors', 'visits', 'bounce_rate'],
      date_range: '7d',
      dimensions: ['visit:source'],
      include: { imports: true },
    })
    expect(bySource.results).toEqual(rowsOf(sources).map((r) => ({ ...r, metrics: [r.metrics[0], r.metrics[1], r.metrics[3]] })))

    // a page's visits: each visit's views of it; a user counts once a day on a page
    const pageVisits = visits.flatMap((x) =>
      [...new Set(x.pages)].map((path) => ({ ...x, source: path, pages: x.pages.filter((p) => p === path) })),
    )
    const pages = new Map(
      [...byValue(pageVisits, (x) => x.source)].map(([path, s]) => [path, { visitors: s.visitors, pageviews: s.pageviews }]),
    )
    for (const [path, t] of Object.entries(TRACKED_PAGES)) {
      const row = pages.get(path) ?? { visitors: 0, pageviews: 0 }
      pages.set(path, { visitors: row.visitors + t.visitors, pageviews: row.pageviews + t.pageviews })
    }
    const byPage = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: '7d',
      dimensions: ['event:page'],
      include: { imports: true },
    })
    expect(byPage.results).toEqual(
      [...pages]
        .sort(([a, x], [b, y]) => y.visitors - x.visitors || (a < b ? -1 : 1))
        .map(([path, r]) => ({ dimensions: [path], metrics: [r.visitors, r.pageviews] })),
    )

    // a window before the first tracked day: the export's numbers alone
    const before = ['2026-11-15', '2026-11-19']
    const imported = counted(FIRST, '2026-11-15', '2026-11-19')
    expect(await breakdown('visit:country', before)).toEqual(
      rowsOf(
        byValue(
          imported,
          (x) => x.country,
          (x) => [x.region],
        ),
      ),
    )
    // Plausible's Laptop is a desktop here
    const device = (x: Visit) => (x.device === 'Laptop' ? 'Desktop' : x.device)
    expect(await breakdown('visit:device', before)).toEqual(rowsOf(byValue(imported, device, (x) => [x.device])))
    // a browser's versions are one browser: their daily visitors add up
    expect(await breakdown('visit:browser', before)).toEqual(
      rowsOf(
        byValue(
          imported,
          (x) => x.browser[0],
          (x) => x.browser,
        ),
      ),
    )
    expect(await breakdown('visit:os', before)).toEqual(
      rowsOf(
        byValue(
          imported,
          (x) => x.os[0],
          (x) => x.os,
        ),
      ),
    )
  })

  it('a day both a GA4 import and the Plausible export cover counts the export alone', async () => {
    const other = newSite({ domain: 'both.plausible.test', timezone: 'UTC' }, site.orgId, NOW)
    await services.repositories.sites.create({ ...other, sources: ['standalone', 'ga4'] })
    await viaCommand(deflatedZip(exportFiles(FIRST)), other.id)
    // GA4 reported 2026-11-13 (before the export's days) and 2026-11-16 (one of them)
    const ga4 = (date: string, user: string) => ({ user, date, engaged: true, dims: {}, pageviews: 3, seconds: 30, events: 0 })
    const units = [ga4('2026-11-13', 'g1'), ga4('2026-11-13', 'g2'), ga4('2026-11-16', 'g3')]
    await services.clickhouse.insert('imported_aggregates', importedRowsOf(other.id, { visitors: units }))
    const json = await query(
      { metrics: ['visitors', 'visits', 'pageviews'], date_range: ['2026-11-10', '2026-11-22'], include: { imports: true } },
      other.domain,
    )
    // nothing is tracked on this site: every day of the export counts, and GA4's 2026-11-13
    const exported = total(FIRST)
    expect(json.results).toEqual([{ metrics: [exported.visitors + 2, exported.visits + 2, exported.pageviews + 6], dimensions: [] }])
  })

  it('refuses a bad file with one sentence naming the file and the line, and stores nothing of it', async () => {
    const good = exportFiles(FIRST)
    const name = (table: string) => Object.keys(good).find((n) => n.startsWith(table))!
    const visitorsFile = name('imported_visitors')
    const pagesFile = name('imported_pages')
    const lines = (file: string) => good[file].split('\r\n')
    const edited = (file: string, line: number, text: string) => {
      const all = lines(file)
      all[line - 1] = text
      return { ...good, [file]: all.join('\r\n') }
    }
    const bytes = (text: string) => strToU8(text)
    const loneSurrogate = Buffer.concat([
      bytes(`${lines(pagesFile).slice(0, 2).join('\r\n')}\r\n2026-11-16,${DOMAIN},/bad`),
      Uint8Array.from([0xed, 0xa0, 0x80]),
      bytes(',1,1,1,,\r\n'),
    ])
    const bomb = deflatedZip(good)
    // the first file's local header says it holds 4 GB unzipped
    bomb.set([0x00, 0xff, 0xff, 0xff], 22)
    const cases: [string, Uint8Array, RegExp][] = [
      [
        'bad header',
        deflatedZip(edited(visitorsFile, 1, 'date,visitors,pageviews,bounces,visits,duration')),
        new RegExp(`^${visitorsFile} line 1: the column "duration" is not one of this file's`),
      ],
      [
        'bad number',
        deflatedZip(edited(visitorsFile, 3, '2026-11-16,2,1x,0,3,205')),
        new RegExp(`^${visitorsFile} line 3: pageviews is "1x", not a whole number`),
      ],
      [
        'bad day',
        deflatedZip(edited(visitorsFile, 2, '2026-02-30,1,1,0,1,1')),
        new RegExp(`^${visitorsFile} line 2: date is "2026-02-30"`),
      ],
      [
        'lone surrogate',
        deflatedZip({ ...good, [pagesFile]: loneSurrogate }),
        new RegExp(`^${pagesFile} line 3: page is not valid UTF-8 text$`),
      ],
      [
        'huge line',
        deflatedZip(edited(pagesFile, 4, `2026-11-16,${DOMAIN},/${'a'.repeat(70_000)},1,1,1,,`)),
        new RegExp(`^${pagesFile} line 4: a line is longer than 65536 bytes$`),
      ],
      [
        'short line',
        deflatedZip(edited(visitorsFile, 2, '2026-11-15,2,3')),
        new RegExp(`^${visitorsFile} line 2: the line has a different number of values than the header$`),
      ],
      ['zip bomb', bomb, /^imported_[a-z_]+_20261115_20261120\.csv: the zip's files hold more than 1024 MB unzipped/],
      ['not a zip', bytes('date,visitors\n'), /^the upload is not a zip file/],
      ['cut short', deflatedZip(good).subarray(0, 1500), /^the zip file is cut short: it has no end record/],
    ]
    const before = await query({ metrics: METRICS, date_range: '7d', include: { imports: true } })
    for (const [what, zip, message] of cases) {
      const uploaded = await upload(zip)
      expect(uploaded.status, what).toBe(400)
      expect(uploaded.json.error, what).toMatch(message)
      await expect(viaCommand(zip), what).rejects.toThrow(message)
    }
    // the command itself: one line on standard error, exit code 1
    const [, zip, message] = cases[1]
    const command = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/import.ts', '--plausible', written(zip), '--site', site.id], {
      env: { ...process.env, DATA_DIR: dir },
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(command.status).toBe(1)
    expect(command.stderr.trimEnd().split('\n')).toHaveLength(1)
    expect(command.stderr.replace(/^error: /, '')).toMatch(message)
    expect(await query({ metrics: METRICS, date_range: '7d', include: { imports: true } })).toEqual(before)
    const imports = (await call('GET', `/api/v1/sites/${site.id}/imports`, { key: readKey })).json.imports
    expect(imports.filter((i: { kind: string }) => i.kind === 'plausible')).toHaveLength(1)
  })

  it('an upload replaces the earlier import whole', async () => {
    // as ClickHouse writes CSV (names and text quoted), and a file saved again with a byte order mark
    const files = Object.fromEntries(
      Object.entries(exportFiles(SECOND)).map(([name, text]) => [
        name,
        `\ufeff${text
          .replace(/^[^\r]+/, (header) =>
            header
              .split(',')
              .map((c) => `"${c}"`)
              .join(','),
          )
          .replace(/(\n)(\d{4}-\d\d-\d\d)/g, '$1"$2"')}`,
      ]),
    )
    const res = await upload(deflatedZip(files))
    expect(res.status, JSON.stringify(res.json)).toBe(201)
    expect(res.json).toMatchObject({ from: '2026-11-17', to: '2026-11-18' })
    const json = await query({ metrics: METRICS, date_range: ['2026-11-10', '2026-11-19'], include: { imports: true } })
    expect(json.results).toEqual([{ metrics: metricsOf(total(SECOND)), dimensions: [] }])
    expect(await breakdown('visit:source', ['2026-11-10', '2026-11-19'])).toEqual(
      rowsOf(byValue(SECOND, (x) => x.source || 'Direct / None')),
    )
    const imports = (await call('GET', `/api/v1/sites/${site.id}/imports`, { key: readKey })).json.imports
    expect(imports.filter((i: { kind: string }) => i.kind === 'plausible')).toHaveLength(2)
    const stored = await services.repositories.sites.get(site.id)
    expect(stored?.imports).toEqual([expect.objectContaining({ source: 'plausible', from: '2026-11-17', to: '2026-11-18' })])
  })
})

describe("the site's imports page", () => {
  it('takes an export as a file, and shows why it refuses one', async () => {
    const t = await webHarness()
    const cookie = await t.signIn(email())
    const orgId = /([0-9a-f-]{36})$/.exec((await t.request('/app/orgs', { form: { name: 'Web' }, cookie })).headers.get('location')!)![1]
    const created = await t.request(`/app/orgs/${orgId}/sites`, { form: { domain: 'web.plausible.test' }, cookie })
    const siteId = /sites\/([0-9a-f-]{36})/.exec(created.headers.get('location')!)![1]
    const post = (zip: Uint8Array) => {
      const form = new FormData()
      form.set('export', new File([new Uint8Array(zip)], 'export.zip', { type: 'application/zip' }))
      return t.request(`/app/sites/${siteId}/settings/imports/plausible`, {
        method: 'POST',
        body: form,
        cookie,
        headers: { origin: ORIGIN },
      })
    }
    const page = await (await t.request(`/app/sites/${siteId}/settings/integrations`, { cookie })).text()
    expect(page).toContain('id="plausible-export"')

    const done = await post(deflatedZip(exportFiles(SECOND)))
    expect(done.status).toBe(303)
    const listed = await (await t.request(`/app/sites/${siteId}/settings/imports`, { cookie })).text()
    expect(listed).toContain('Plausible export')
    expect(listed).toContain('2026-11-17 – 2026-11-18')

    const files = exportFiles(SECOND)
    const visitors = Object.keys(files).find((n) => n.startsWith('imported_visitors'))!
    const refused = await post(deflatedZip({ ...files, [visitors]: 'date,visitors\r\n2026-11-17,x\r\n' }))
    expect(refused.status).toBe(400)
    expect(await refused.text()).toContain(`${visitors} line 1: the column visits is missing`)
  })
})
