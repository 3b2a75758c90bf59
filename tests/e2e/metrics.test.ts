import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { harness, tempDir } from '../helpers'
import { type RunningServer, demoKeys, startServer } from './server-process'

const TOKEN = `metrics-${crypto.randomUUID()}`

/** The value of one sample of the Prometheus text: `name{labels}` exactly as written, 0 when absent. */
function sample(text: string, series: string): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1))
  }
  return 0
}

describe('GET /metrics on the Node server, with METRICS_TOKEN', () => {
  let server: RunningServer
  let keys: ReturnType<typeof demoKeys>
  let snippet = ''
  beforeAll(async () => {
    server = await startServer({
      DATA_DIR: tempDir('metrics'),
      REDIS_URL: '',
      UPSTASH_REDIS_REST_URL: '',
      CLICKHOUSE_URL: '',
      DEMO: '1',
      SKIP_DEMO_TRAFFIC: '1',
      METRICS_TOKEN: TOKEN,
    })
    keys = demoKeys(server.stdout())
    snippet = /snippet (\w+)/.exec(server.stdout())![1]
  })
  afterAll(async () => {
    await server?.stop()
  })
  const metrics = async (token = TOKEN) => {
    const res = await fetch(`${server.url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} })
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() }
  }
  const hit = (url: string) =>
    fetch(`${server.url}/api/event`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0' },
      body: JSON.stringify({ site: snippet, name: 'pageview', url }),
    })

  it('is 401 without the token or with another, and never logs it', async () => {
    expect((await metrics('')).status).toBe(401)
    expect((await metrics('not-the-token-at-all')).status).toBe(401)
    expect(JSON.parse((await metrics('')).text).error).toMatch(/METRICS_TOKEN/)
    expect(server.output()).not.toContain(TOKEN)
  })

  it('counts requests, hits accepted, journaled, stored and dropped as they happen', async () => {
    const before = await metrics()
    expect(before.status).toBe(200)
    expect(before.type).toMatch(/^text\/plain; version=0\.0\.4/)
    for (const name of [
      'http_request_duration_seconds_bucket',
      'journal_pending_rows',
      'journal_oldest_pending_seconds',
      'clickhouse_query_duration_seconds_count',
      'kv_call_duration_seconds_count',
      'process_cpu_seconds_total',
    ]) {
      expect(before.text, name).toContain(name)
    }

    for (let i = 0; i < 7; i++) expect((await hit(`https://demo.example.com/metrics/${i}`)).status).toBe(202)
    // a page on another site's domain is accepted and dropped, named by its reason
    const dropped = await hit('https://elsewhere.example.org/')
    expect(dropped.headers.get('x-dropped')).toBe('unknown-hostname')
    // a read, so that a query is timed
    const stats = await fetch(`${server.url}/api/v1/stats?site_id=${keys.site}&range=today`, {
      headers: { authorization: `Bearer ${keys.readKey}` },
    })
    expect(stats.status).toBe(200)

    // the flush runs every second
    let after = await metrics()
    for (
      let i = 0;
      i < 50 && sample(after.text, 'events_stored_total{table="events"}') - sample(before.text, 'events_stored_total{table="events"}') < 7;
      i++
    ) {
      await new Promise((r) => setTimeout(r, 100))
      after = await metrics()
    }
    const moved = (series: string) => sample(after.text, series) - sample(before.text, series)
    expect(moved('events_accepted_total')).toBe(7)
    expect(moved('events_journaled_total{result="durable"}')).toBe(7)
    expect(moved('events_stored_total{table="events"}')).toBe(7)
    expect(moved('events_dropped_total{reason="unknown-hostname"}')).toBe(1)
    expect(moved('http_requests_total{route="/api/event",method="POST",status="202"}')).toBe(8)
    expect(moved('http_requests_total{route="/api/v1/stats",method="GET",status="200"}')).toBe(1)
    expect(moved('clickhouse_query_duration_seconds_count{kind="query"}')).toBeGreaterThan(0)
    expect(sample(after.text, 'journal_pending_rows')).toBe(0)
  })
})

describe('GET /metrics without METRICS_TOKEN', () => {
  it('is 404: off unless configured', async () => {
    const t = await harness()
    const res = await t.app.request('http://api.test/metrics')
    expect(res.status).toBe(404)
    expect((await res.json()).error).toMatch(/METRICS_TOKEN/)
  })
})
