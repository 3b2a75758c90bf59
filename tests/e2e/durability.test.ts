import { afterAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, demoKeys, startServer } from './server-process'

/**
 * A 202 from /api/event is a promise: the hit survives `kill -9` of the server that gave it,
 * however soon after the answer the process dies. Checked on a real server process: hits sent
 * concurrently, the server killed with SIGKILL right after the last acknowledgement (and, in a
 * second round, while hits are still arriving), then restarted on the same data folder.
 */
describe('acknowledged hits survive SIGKILL', () => {
  const env = { DATA_DIR: tempDir('durable'), REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '', SKIP_DEMO_TRAFFIC: '1' }
  let server: RunningServer
  let readKey = ''
  let snippet = ''
  let siteId = ''

  afterAll(async () => {
    await server?.stop()
  })

  const send = (n: number, round: string) =>
    Array.from({ length: n }, (_, i) =>
      fetch(`${server.url}/api/event`, {
        method: 'POST',
        headers: {
          'content-type': 'text/plain',
          'user-agent': `Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.${i % 40}`,
        },
        body: JSON.stringify({ site: snippet, name: 'pageview', url: `https://demo.example.com/${round}/${i}` }),
      }).then(
        (res) => res.status === 202,
        () => false,
      ),
    )

  const stored = async (round: string) => {
    // a restarted server answers while it stores what the killed one journaled: /ready says when it is done
    for (let i = 0; i < 300 && (await fetch(`${server.url}/ready`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100))
    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'path', operator: 'contains', value: [`/${round}/`] }]))
    const res = await fetch(`${server.url}/api/v1/stats?site_id=${siteId}&range=today&filters=${filters}`, {
      headers: { authorization: `Bearer ${readKey}` },
    })
    return (await res.json()).totals.pageviews as number
  }

  it('every hit answered 202 is stored after a restart, killed right after the last answer', async () => {
    server = await startServer(env)
    const demo = demoKeys(server.output())
    readKey = demo.readKey
    const site = await (await fetch(`${server.url}/api/v1/sites/${demo.site}`, { headers: { authorization: `Bearer ${readKey}` } })).json()
    siteId = site.id
    snippet = site.snippetId
    const acknowledged = (await Promise.all(send(3000, 'a'))).filter(Boolean).length
    expect(acknowledged).toBe(3000)
    expect(await server.stop('SIGKILL')).toBeNull()
    server = await startServer(env)
    expect(await stored('a')).toBe(3000)
  })

  it('killed while hits are still arriving: at least every acknowledged one, never more than were sent', async () => {
    const inFlight = send(3000, 'b')
    // let about half be answered, then kill without warning
    let answered = 0
    await new Promise<void>((resolve) => {
      for (const p of inFlight) void p.then((ok) => ok && ++answered >= 1500 && resolve())
    })
    expect(await server.stop('SIGKILL')).toBeNull()
    const acknowledged = (await Promise.all(inFlight)).filter(Boolean).length
    server = await startServer(env)
    const count = await stored('b')
    expect(count).toBeGreaterThanOrEqual(acknowledged)
    // never stored twice: not more than were sent (a hit journaled but not yet answered is stored too)
    expect(count).toBeLessThanOrEqual(3000)
    console.log(`SIGKILL mid-stream: ${acknowledged} acknowledged, ${count} stored`)
  })
})
