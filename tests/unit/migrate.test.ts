import { describe, expect, it } from 'vitest'
import { migrate, parseMigrationFile, renderMigration } from '../../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../../lib/storage/clickhouse/migrations-node'
import { testClickHouse } from '../helpers'
import { propertyKeyCountsSql, propertyValuesSql } from '../../lib/reports/query/compile/properties'
import { resolveRange } from '../../lib/reports/query/range'
import type { Query } from '../../lib/reports/query/model'
import { render } from '../../lib/storage/clickhouse/sql'
import { SITE_TABLES } from '../../lib/storage/clickhouse/site-data'
import { launchedPagesSql } from '../../lib/insights/why/compile'
import { Temporal } from 'temporal-polyfill'

describe('ClickHouse migrations', () => {
  it('are numbered files, rendered plain for one server and ON CLUSTER with Replicated engines for a cluster', () => {
    const migrations = loadMigrations()
    expect(migrations.map((m) => m.version)).toEqual(migrations.map((_, i) => i + 1))
    expect(() => parseMigrationFile('events.sql', '')).toThrow(/NNNN_name/)
    const plain = renderMigration(migrations[0].sql)
    expect(plain).toHaveLength(2)
    expect(plain[0]).toMatch(/^CREATE TABLE IF NOT EXISTS events\s+\(/)
    expect(plain[0]).toMatch(/ENGINE = MergeTree\s+PARTITION BY toYYYYMM\(timestamp\)\s+ORDER BY \(site_id,/)
    const clustered = renderMigration(migrations[0].sql, 'main')
    expect(clustered[0]).toMatch(/events ON CLUSTER main/)
    expect(clustered[0]).toMatch(/ENGINE = ReplicatedMergeTree/)
    expect(() => renderMigration('x', 'a; DROP')).toThrow()
  })

  it('applies each migration once and records it', async () => {
    const clickhouse = await testClickHouse() // already migrated once
    expect(await migrate(clickhouse, loadMigrations())).toEqual([])
    const rows = await clickhouse.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations ORDER BY version')
    expect(rows).toEqual([
      { version: 1, name: 'events' },
      { version: 2, name: 'sessions' },
      { version: 3, name: 'day_rollups' },
      { version: 4, name: 'events_input' },
      { version: 5, name: 'crawl' },
      { version: 6, name: 'pathname_low_cardinality' },
      { version: 7, name: 'filtered_rollup_expiry' },
      { version: 8, name: 'visit_pages' },
      { version: 9, name: 'rollup_engagement_reports' },
      { version: 10, name: 'rollup_places' },
      { version: 11, name: 'partial_rollups' },
      { version: 12, name: 'purge_typed_click_text' },
      { version: 13, name: 'imported_aggregates' },
      { version: 14, name: 'search_console' },
      { version: 15, name: 'insert_deduplication' },
      { version: 16, name: 'backlinks' },
      { version: 17, name: 'heatmap' },
      { version: 18, name: 'ai_assistants_channel' },
      { version: 19, name: 'non_interactive_events' },
      { version: 20, name: 'events_sampling' },
      { version: 21, name: 'events_by_path' },
      { version: 22, name: 'flow_rollups' },
      { version: 23, name: 'events_props_index' },
      { version: 24, name: 'page_errors_by_path' },
      { version: 25, name: 'click_rollups' },
      { version: 26, name: 'filtered_flow_rollup_expiry' },
      { version: 27, name: 'ai_rollups' },
      { version: 28, name: 'error_rollups' },
      { version: 29, name: 'page_first_views' },
      { version: 30, name: 'quarters' },
    ])
    const applied = await migrate(clickhouse, [
      ...loadMigrations(),
      { version: 100, name: 'extra', sql: 'CREATE TABLE IF NOT EXISTS extra_t (a UInt8) ENGINE = Memory;' },
    ])
    expect(applied.map((m) => m.version)).toEqual([100])
    expect((await clickhouse.query('SELECT count() AS n FROM schema_migrations'))[0]).toEqual({ n: String(rows.length + 1) })
  })

  it('lists every table holding rows of a site in SITE_TABLES, so deleting a site deletes all of its rows', async () => {
    const clickhouse = await testClickHouse()
    const tables = await clickhouse.query<{ table: string }>(
      `SELECT DISTINCT c.table AS table FROM system.columns AS c INNER JOIN system.tables AS t ON t.database = c.database AND t.name = c.table
       WHERE c.database = currentDatabase() AND c.name = 'site_id' AND t.engine NOT IN ('Null', 'MaterializedView', 'View') ORDER BY table`,
    )
    expect(tables.length).toBeGreaterThan(10)
    expect([...SITE_TABLES].sort()).toEqual(tables.map((t) => t.table))
  })

  it('clears stored click text that is not a button or link label (what an older tracker took from form fields)', async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    const click = (tag: string, text: string) => `({site:UUID}, now(), 'click', 'click', '${tag}', '${text}')`
    await clickhouse.command(
      `INSERT INTO events (site_id, timestamp, name, kind, element_tag, element_text)
       VALUES ${[click('input', 'typed@mail.test'), click('textarea', 'typed note'), click('div', 'typed in an editor'), click('button', 'Buy'), click('a', 'Docs')].join(', ')}`,
      { site },
    )
    const purge = loadMigrations().find((m) => m.name === 'purge_typed_click_text')!
    for (const statement of renderMigration(purge.sql)) await clickhouse.command(statement)
    for (const table of ['events', 'recent_events']) {
      const rows = await clickhouse.query(
        `SELECT element_tag AS tag, element_text AS text FROM ${table} WHERE site_id = {site:UUID} ORDER BY tag`,
        { site },
      )
      expect(rows, table).toEqual([
        { tag: 'a', text: 'Docs' },
        { tag: 'button', text: 'Buy' },
        { tag: 'div', text: '' },
        { tag: 'input', text: '' },
        { tag: 'textarea', text: '' },
      ])
    }
  })

  it('renames the AI channel to AI assistants in events, sessions and the rollups, other channels and properties left alone', async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    const event = (session: number, channel: string) =>
      `({site:UUID}, now() - INTERVAL 1 HOUR, 'pageview', 'pageview', ${session}, ${session}, now() - INTERVAL 1 HOUR, '${channel}')`
    await clickhouse.command(
      `INSERT INTO events (site_id, timestamp, name, kind, visitor_id, session_id, session_start, channel)
       VALUES ${[event(1, 'AI'), event(2, 'AI'), event(3, 'Referral')].join(', ')}`,
      { site },
    )
    const rollup = (property: string, value: string) =>
      `({site:UUID}, 'UTC', 1, '${property}', today() - 3, 1, 1, '${value}', 2, 2, 2, 0, 0, 0)`
    await clickhouse.command(
      `INSERT INTO day_rollups (site_id, timezone, version, property, day, day_events, day_sum, value, visitors, visits, pageviews, events, bounces, duration_ms)
       VALUES ${[rollup('channel', 'AI'), rollup('channel', 'Direct'), rollup('filters:abc:channel', 'AI'), rollup('source', 'AI')].join(', ')}`,
      { site },
    )
    const rename = loadMigrations().find((m) => m.name === 'ai_assistants_channel')!
    for (const statement of renderMigration(rename.sql)) await clickhouse.command(statement)
    for (const table of ['events', 'recent_events']) {
      const rows = await clickhouse.query<{ channel: string }>(
        `SELECT channel FROM ${table} WHERE site_id = {site:UUID} ORDER BY session_id`,
        { site },
      )
      expect(
        rows.map((r) => r.channel),
        table,
      ).toEqual(['AI assistants', 'AI assistants', 'Referral'])
    }
    const sessions = await clickhouse.query<{ channel: string }>(
      'SELECT any(channel) AS channel FROM sessions WHERE site_id = {site:UUID} GROUP BY session_id ORDER BY session_id',
      { site },
    )
    expect(sessions.map((r) => r.channel)).toEqual(['AI assistants', 'AI assistants', 'Referral'])
    const rolled = await clickhouse.query<{ property: string; value: string; visits: string }>(
      'SELECT property, value, visits FROM day_rollups FINAL WHERE site_id = {site:UUID} ORDER BY property, value',
      { site },
    )
    expect(rolled).toEqual([
      { property: 'channel', value: 'AI assistants', visits: '2' },
      { property: 'channel', value: 'Direct', visits: '2' },
      { property: 'filters:abc:channel', value: 'AI assistants', visits: '2' },
      { property: 'source', value: 'AI', visits: '2' },
    ])
  })

  it('expires rows a filtered read rolled up 30 days after they were built, never the daily rollup', async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    const row = (property: string, daysAgo: number) =>
      `({site:UUID}, 'UTC', 1, '${property}', today() - 40, 1, 1, '', 1, 1, 1, 0, 0, 0, now() - toIntervalDay(${daysAgo}))`
    await clickhouse.command(
      `INSERT INTO day_rollups (site_id, timezone, version, property, day, day_events, day_sum, value, visitors, visits, pageviews, events, bounces, duration_ms, built_at)
       VALUES ${[row('filters:old', 31), row('filters:new', 29), row('', 31), row('path', 31)].join(', ')}`,
      { site },
    )
    await clickhouse.command('OPTIMIZE TABLE day_rollups FINAL')
    const left = await clickhouse.query<{ property: string }>(
      'SELECT property FROM day_rollups WHERE site_id = {site:UUID} ORDER BY property',
      { site },
    )
    expect(left.map((r) => r.property)).toEqual(['', 'filters:new', 'path'])
  })

  it('expires the flow rows a filtered read rolled up 30 days after they were built, never the flow rollup', async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    const row = (anchor: string, daysAgo: number) =>
      `({site:UUID}, 'UTC', 1, '${anchor}', 0, '/', today() - 40, 1, 1, 1, 0, 0, [], now() - toIntervalDay(${daysAgo}))`
    await clickhouse.command(
      `INSERT INTO flow_rollups (site_id, timezone, version, anchor, step, path, day, day_events, day_sum, visits, exits, opens, outs, built_at)
       VALUES ${[row('filters:old:flow:(entry)', 31), row('filters:new:flow:(entry)', 29), row('(entry)', 31), row('(built)', 31), row('/docs', 31)].join(', ')}`,
      { site },
    )
    await clickhouse.command('OPTIMIZE TABLE flow_rollups FINAL')
    const left = await clickhouse.query<{ anchor: string }>('SELECT anchor FROM flow_rollups WHERE site_id = {site:UUID} ORDER BY anchor', {
      site,
    })
    expect(left.map((r) => r.anchor)).toEqual(['(built)', '(entry)', '/docs', 'filters:new:flow:(entry)'])
  })

  it('passes rows inserted into events_input on to events and its views; the three tables keep the same columns', async () => {
    const clickhouse = await testClickHouse()
    const columns = async (table: string) =>
      clickhouse.query<{ name: string; type: string }>(
        'SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = {table:String} ORDER BY position',
        { table },
      )
    const plain = (type: string) => type.replace(/LowCardinality\((\w+)\)/g, '$1')
    const events = await columns('events')
    expect(events.length).toBeGreaterThan(40)
    expect(await columns('events_input')).toEqual(events.map((c) => ({ name: c.name, type: plain(c.type) })))
    // recent_events: the same columns, and when each row arrived
    expect(await columns('recent_events')).toEqual([...events, { name: 'inserted_at', type: "DateTime('UTC')" }])

    const site = crypto.randomUUID()
    await clickhouse.insert('events_input', [
      {
        site_id: site,
        timestamp: '2026-11-01 10:00:00.000',
        name: 'pageview',
        kind: 'pageview',
        visitor_id: '7',
        session_id: '18446744073709551615',
        session_start: '2026-11-01 10:00:00.000',
        pathname: '/',
        browser: 'Firefox',
        props: { plan: 'pro' },
      },
    ])
    expect(await clickhouse.query('SELECT kind, session_id, browser, props FROM events WHERE site_id = {site:UUID}', { site })).toEqual([
      { kind: 'pageview', session_id: '18446744073709551615', browser: 'Firefox', props: { plan: 'pro' } },
    ])
    expect(await clickhouse.query('SELECT sum(pageviews) AS pageviews FROM sessions WHERE site_id = {site:UUID}', { site })).toEqual([
      { pageviews: '1' },
    ])
    expect(await clickhouse.query('SELECT sum(events) AS events FROM quarters WHERE site_id = {site:UUID}', { site })).toEqual([
      { events: '1' },
    ])
    expect(
      await clickhouse.query(
        'SELECT toString(quarter) AS quarter, sum(visit_events) AS events FROM quarters WHERE site_id = {site:UUID} GROUP BY quarter',
        { site },
      ),
    ).toEqual([{ quarter: '2026-11-01 10:00:00', events: '1' }])
    expect(await clickhouse.query('SELECT session_id, pathname FROM recent_events WHERE site_id = {site:UUID}', { site })).toEqual([
      { session_id: '18446744073709551615', pathname: '/' },
    ])
    expect(await clickhouse.query('SELECT count() AS n FROM events_input')).toEqual([{ n: '0' }])
  })

  it('feeds the sessions table from events: per-visit facts merge by session id', async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    const base = {
      site_id: site,
      visitor_id: '7',
      session_id: '99',
      session_start: '2026-11-01 10:00:00.000',
      referrer_source: 'Google',
      country_code: 'DE',
    }
    // two separate inserts: two unmerged parts of one visit
    await clickhouse.insert('events', [
      { ...base, timestamp: '2026-11-01 10:00:00.000', name: 'pageview', kind: 'pageview', pathname: '/' },
    ])
    await clickhouse.insert('events', [
      { ...base, timestamp: '2026-11-01 10:05:00.000', name: 'signup', kind: 'custom', pathname: '/pricing' },
      { ...base, timestamp: '2026-11-01 10:07:30.000', name: 'pageview', kind: 'pageview', pathname: '/pricing' },
    ])
    const rows = await clickhouse.query(
      `SELECT session_id, argMinMerge(entry_page) AS entry, argMaxMerge(exit_page) AS exit, sum(pageviews) AS pageviews,
              sum(custom_events) AS custom, dateDiff('second', min(session_start), max(end)) AS duration, any(referrer_source) AS source
       FROM sessions WHERE site_id = {site:UUID} GROUP BY session_id`,
      { site },
    )
    expect(rows).toEqual([
      { session_id: '99', entry: '/', exit: '/pricing', pageviews: '2', custom: '1', duration: '450', source: 'Google' },
    ])
  })

  it('counts non-interactive custom events apart in sessions; rows written before 0019 read every custom event as interactive', async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    const base = { site_id: site, visitor_id: '8', session_start: '2026-11-01 10:00:00.000', pathname: '/' }
    await clickhouse.insert('events_input', [
      { ...base, session_id: '1', timestamp: '2026-11-01 10:00:00.000', name: 'pageview', kind: 'pageview' },
      { ...base, session_id: '1', timestamp: '2026-11-01 10:01:00.000', name: 'Autoplay', kind: 'custom', non_interactive: 1 },
      { ...base, session_id: '1', timestamp: '2026-11-01 10:02:00.000', name: 'Signup', kind: 'custom' },
    ])
    // a second part of the same visit: one more non-interactive event
    await clickhouse.insert('events_input', [
      { ...base, session_id: '1', timestamp: '2026-11-01 10:03:00.000', name: 'Autoplay', kind: 'custom', non_interactive: 1 },
    ])
    // a visit's row as the view wrote it before 0019, without the column: its 2 custom events were interactive
    await clickhouse.command(
      `INSERT INTO sessions (site_id, session_id, session_start, visitor_id, end, pageviews, custom_events, events)
       VALUES ({site:UUID}, 2, '2026-11-01 10:00:00.000', 8, '2026-11-01 10:05:00.000', 1, 2, 3)`,
      { site },
    )
    const read = () =>
      clickhouse.query(
        `SELECT session_id, sum(custom_events) AS custom, sum(interactive_events) AS interactive
         FROM sessions WHERE site_id = {site:UUID} GROUP BY session_id ORDER BY session_id`,
        { site },
      )
    const expected = [
      { session_id: '1', custom: '3', interactive: '1' },
      { session_id: '2', custom: '2', interactive: '2' },
    ]
    expect(await read()).toEqual(expected)
    await clickhouse.command('OPTIMIZE TABLE sessions FINAL')
    expect(await read()).toEqual(expected)
  })

  it('feeds visit_pages from events: a visit’s pageviews from separate inserts read as one row, as the migration’s backfill selects them', async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    const base = { site_id: site, visitor_id: '7', session_id: '42', session_start: '2026-11-01 10:00:00.000' }
    await clickhouse.insert('events', [
      { ...base, timestamp: '2026-11-01 10:07:30.000', name: 'pageview', kind: 'pageview', pathname: '/pricing' },
    ])
    await clickhouse.insert('events', [
      { ...base, timestamp: '2026-11-01 10:00:00.000', name: 'pageview', kind: 'pageview', pathname: '/' },
      { ...base, timestamp: '2026-11-01 10:05:00.000', name: 'signup', kind: 'custom', pathname: '/' },
    ])
    const expected = [
      {
        session_id: '42',
        pages: [
          ['2026-11-01 10:00:00.000', '/'],
          ['2026-11-01 10:07:30.000', '/pricing'],
        ],
      },
    ]
    expect(
      await clickhouse.query('SELECT session_id, arraySort(pages) AS pages FROM visit_pages FINAL WHERE site_id = {site:UUID}', { site }),
    ).toEqual(expected)
    const backfill = renderMigration(loadMigrations().find((m) => m.name === 'visit_pages')!.sql).find((s) =>
      s.startsWith('INSERT INTO visit_pages'),
    )!
    const select = backfill.replace(/^INSERT INTO visit_pages\s+/, '')
    expect(
      await clickhouse.query(`SELECT session_id, arraySort(pages) AS pages FROM (${select}) WHERE site_id = {site:UUID}`, { site }),
    ).toEqual(expected)
  })

  it('indexes events by their property count (0023): the properties reads skip granules without properties and answer what reading every granule answers', async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    // one day of one site in one part: 30,000 pageviews without properties, then 100 Signup events
    // (plan pro on odd numbers, free on even; visitor number % 10) and 20 vitals carrying only the
    // collector's attribution keys. Signup sorts before pageview and vital after it, so the pageviews
    // fill granules of their own.
    await clickhouse.command(
      `INSERT INTO events (site_id, timestamp, name, kind, visitor_id, session_id, session_start, pathname, props)
       SELECT {site:UUID}, toDateTime64('2026-11-01 10:00:00', 3, 'UTC') + toIntervalSecond(number % 3600) AS ts,
              multiIf(number < 30000, 'pageview', number < 30100, 'Signup', 'vital'),
              multiIf(number < 30000, 'pageview', number < 30100, 'custom', 'vital'),
              number % 10, number, ts, '/',
              multiIf(number < 30000, map(), number < 30100, map('plan', if(number % 2 = 1, 'pro', 'free')), map('attribution.target', 'img'))
       FROM numbers(30120)`,
      { site },
    )
    const now = new Date('2026-11-02T12:00:00Z')
    const range = resolveRange({ range: 'custom', from: '2026-11-01', to: '2026-11-01' }, 'UTC', now)
    const query: Query = { siteId: site, range, filters: [], goals: [], limit: 10, now }
    const run = async (statement: ReturnType<typeof render>, settings = '') =>
      clickhouse.query(`${statement.sql}${settings}`, statement.params)
    const marks = async (statement: ReturnType<typeof render>, settings = '') =>
      Number((await clickhouse.query<{ marks: string }>(`EXPLAIN ESTIMATE ${statement.sql}${settings}`, statement.params))[0].marks)

    const keys = render(propertyKeyCountsSql(query))
    const values = render(propertyValuesSql(query, 'plan'))
    // counted by hand: 100 Signup events on visitors 0-9; pro on the 50 odd numbers (visitors 1, 3, 5, 7, 9), free on the 50 even
    expect(await run(keys)).toEqual([{ key: 'plan', events: '100', visitors: '10' }])
    expect(await run(values)).toEqual([
      { value: 'free', events: '50', visitors: '5' },
      { value: 'pro', events: '50', visitors: '5' },
    ])
    // the same statements reading every granule answer the same
    expect(await run(keys, '\nSETTINGS use_skip_indexes = 0')).toEqual(await run(keys))
    expect(await run(values, '\nSETTINGS use_skip_indexes = 0')).toEqual(await run(values))
    // and the index leaves out the pageviews' granules
    expect(await marks(keys)).toBeLessThan(await marks(keys, '\nSETTINGS use_skip_indexes = 0'))
  })
})

describe('page_first_views (0029)', () => {
  it("keeps each page's first pageview as events arrive, the same after the backfill runs again, and the launches read finds pages by it", async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    const insert = (rows: [string, string, string][]) =>
      clickhouse.insert(
        'events',
        rows.map(([timestamp, kind, pathname], i) => ({
          site_id: site,
          timestamp,
          name: kind === 'pageview' ? 'pageview' : 'Signup',
          kind,
          visitor_id: i,
          session_id: i,
          session_start: timestamp,
          pathname,
        })),
      )
    // /a first viewed on the 3rd (a later view on the 5th in the same insert, an earlier one on the 2nd in
    // a later insert); /b has a custom event on the 1st but its first pageview on the 6th; /c only on the 20th
    await insert([
      ['2026-10-05 10:00:00.000', 'pageview', '/a'],
      ['2026-10-03 10:00:00.000', 'pageview', '/a'],
      ['2026-10-01 10:00:00.000', 'custom', '/b'],
      ['2026-10-06 09:30:00.000', 'pageview', '/b'],
    ])
    await insert([
      ['2026-10-02 08:00:00.000', 'pageview', '/a'],
      ['2026-10-20 12:00:00.000', 'pageview', '/c'],
    ])
    const firsts = async () =>
      clickhouse.query<{ pathname: string; first: string }>(
        'SELECT pathname, toString(min(first_view)) AS first FROM page_first_views WHERE site_id = {site:UUID} GROUP BY pathname ORDER BY pathname',
        { site },
      )
    const expected = [
      { pathname: '/a', first: '2026-10-02 08:00:00.000' },
      { pathname: '/b', first: '2026-10-06 09:30:00.000' },
      { pathname: '/c', first: '2026-10-20 12:00:00.000' },
    ]
    expect(await firsts()).toEqual(expected)
    // the migration's backfill, run again over the same events (as rows inserted while it ran are): nothing changes
    const migration = loadMigrations().find((m) => m.version === 29)!
    const backfill = renderMigration(migration.sql).find((s) => s.startsWith('INSERT INTO page_first_views'))!
    await clickhouse.command(backfill)
    expect(await firsts()).toEqual(expected)
    // launched in [Oct 4, Oct 10): /b only (/a came before, /c after the window's end)
    const at = (iso: string) => Temporal.Instant.from(iso)
    const launched = render(launchedPagesSql(site, at('2026-10-04T00:00:00Z'), at('2026-10-10T00:00:00Z')))
    expect(await clickhouse.query(launched.sql, launched.params)).toEqual([
      { pathname: '/b', first: String(Date.parse('2026-10-06T09:30:00Z')) },
    ])
  })
})

describe('quarters (0030)', () => {
  const quarterOf = (iso: string) => {
    const t = Date.parse(`${iso.replace(' ', 'T')}Z`)
    return new Date(t - (t % (15 * 60_000))).toISOString().replace('T', ' ').slice(0, 19)
  }

  it('counts each event by its quarter hour and by its visit start quarter, in one table', async () => {
    const clickhouse = await testClickHouse()
    const site = crypto.randomUUID()
    // [time, visit id, visit start]: visit 5 crosses a quarter hour and midnight, visit 9 starts in the same quarter as an event of 5
    const fixture: [string, bigint, string][] = [
      ['2026-10-01 23:50:00.000', 5n, '2026-10-01 23:50:00.000'],
      ['2026-10-01 23:58:00.000', 5n, '2026-10-01 23:50:00.000'],
      ['2026-10-02 00:05:00.000', 5n, '2026-10-01 23:50:00.000'],
      ['2026-10-02 00:07:00.000', 9n, '2026-10-02 00:07:00.000'],
      ['2026-10-02 00:20:00.000', 18446744073709551615n, '2026-10-02 00:20:00.000'],
    ]
    await clickhouse.insert(
      'events_input',
      fixture.map(([timestamp, session, start], i) => ({
        site_id: site,
        timestamp,
        name: 'pageview',
        kind: 'pageview',
        visitor_id: String(i),
        session_id: String(session),
        session_start: start,
        pathname: '/',
      })),
    )
    // the expected sums, from the fixture (session-id sums wrap at 2^64, as the engine's)
    const expected = new Map<string, { events: number; session: bigint; visits: number; visitSession: bigint }>()
    const at = (q: string) => expected.get(q) ?? expected.set(q, { events: 0, session: 0n, visits: 0, visitSession: 0n }).get(q)!
    for (const [time, session, start] of fixture) {
      const byTime = at(quarterOf(time))
      byTime.events++
      byTime.session = (byTime.session + session) % 2n ** 64n
      const byStart = at(quarterOf(start))
      byStart.visits++
      byStart.visitSession = (byStart.visitSession + session) % 2n ** 64n
    }
    const rows = await clickhouse.query(
      `SELECT toString(quarter) AS quarter, sum(events) AS events, toString(sum(session_sum)) AS session,
         sum(visit_events) AS visits, toString(sum(visit_session_sum)) AS visit_session
       FROM quarters WHERE site_id = {site:UUID} GROUP BY quarter ORDER BY quarter`,
      { site },
    )
    expect(rows).toEqual(
      [...expected]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([quarter, e]) => ({
          quarter,
          events: String(e.events),
          session: String(e.session),
          visits: String(e.visits),
          visit_session: String(e.visitSession),
        })),
    )
    // one row per quarter: the 23:45 quarter holds both sums of visit 5's first two events
    expect(rows).toHaveLength(3)
  })

  it('copies the two old tables in, once when it runs again, and drops them', async () => {
    const clickhouse = await testClickHouse()
    const statements = renderMigration(loadMigrations().find((m) => m.version === 30)!.sql)
    const site = crypto.randomUUID()
    // the old tables as an installation at 0029 had them (their views are gone already: the migration's first statements)
    const oldRows = async () => {
      for (const statement of statements.filter((s) => /^CREATE TABLE IF NOT EXISTS (event|visit)_quarters/.test(s)))
        await clickhouse.command(statement)
      await clickhouse.insert('event_quarters', [
        { site_id: site, quarter: '2026-09-01 10:00:00', events: 3, session_sum: 30 },
        { site_id: site, quarter: '2026-09-01 10:00:00', events: 2, session_sum: 20 },
        { site_id: site, quarter: '2026-10-02 00:15:00', events: 1, session_sum: 7 },
      ])
      await clickhouse.insert('visit_quarters', [{ site_id: site, quarter: '2026-09-01 09:45:00', events: 4, session_sum: 40 }])
    }
    const copied = () =>
      clickhouse.query(
        `SELECT toString(quarter) AS quarter, sum(events) AS events, sum(session_sum) AS s, sum(visit_events) AS visits, sum(visit_session_sum) AS vs
         FROM quarters WHERE site_id = {site:UUID} GROUP BY quarter ORDER BY quarter`,
        { site },
      )
    const expected = [
      { quarter: '2026-09-01 09:45:00', events: '0', s: '0', visits: '4', vs: '40' },
      { quarter: '2026-09-01 10:00:00', events: '5', s: '50', visits: '0', vs: '0' },
      { quarter: '2026-10-02 00:15:00', events: '1', s: '7', visits: '0', vs: '0' },
    ]
    await oldRows()
    for (const statement of statements) await clickhouse.command(statement)
    expect(await copied()).toEqual(expected)
    const tables = async () =>
      (
        await clickhouse.query<{ name: string }>(
          "SELECT name FROM system.tables WHERE database = currentDatabase() AND name IN ('event_quarters', 'visit_quarters', 'event_quarters_mv', 'visit_quarters_mv')",
        )
      ).map((t) => t.name)
    expect(await tables()).toEqual([])
    // a run that failed after copying and is repeated: the old tables still hold the same rows; nothing is counted twice
    await oldRows()
    for (const statement of statements) await clickhouse.command(statement)
    expect(await copied()).toEqual(expected)
    expect(await tables()).toEqual([])
  })
})
