import { describe, expect, it } from 'vitest'
import type { Readiness } from '../../lib/runtime/services'
import { harness } from '../helpers'

describe('GET /ready', () => {
  it('is 503 while migrations run, when only health and readiness answer; 503 while the journal is stored; 200 after', async () => {
    let state: Readiness = { ready: false, phase: 'migrating' }
    const t = await harness({ with: { readiness: () => state } })
    // through the app itself: the test client treats any 5xx as a failure of the test
    const get = async (path: string) => {
      const res = await t.app.request(`http://api.test${path}`, { headers: { authorization: `Bearer ${t.a.read.key}` } })
      return { status: res.status, retryAfter: res.headers.get('retry-after'), json: await res.json() }
    }
    const stats = `/api/v1/stats?site_id=${t.a.site.id}&range=7d`

    expect(await get('/ready')).toMatchObject({ status: 503, json: { ready: false, phase: 'migrating' } })
    expect((await get('/health')).status).toBe(200)
    expect(await get(stats)).toEqual({
      status: 503,
      retryAfter: '2',
      json: { error: 'the service is starting (applying its migrations); retry in 2 s' },
    })

    state = { ready: false, phase: 'replaying' }
    expect(await get('/ready')).toMatchObject({ status: 503, json: { ready: false, phase: 'replaying' } })
    // it serves while the journal is stored
    expect((await get(stats)).status).toBe(200)

    // a first start making the demo: not ready, and serving (its keys are not shown yet)
    state = { ready: false, phase: 'demo' }
    expect(await get('/ready')).toMatchObject({ status: 503, json: { ready: false, phase: 'demo' } })
    expect((await get(stats)).status).toBe(200)

    state = { ready: true, phase: 'ready' }
    expect(await get('/ready')).toEqual({ status: 200, retryAfter: null, json: { ready: true, phase: 'ready' } })
  })

  it('is 200 where nothing starts up (Workers, tests)', async () => {
    const t = await harness()
    const res = await t.app.request('http://api.test/ready')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ready: true, phase: 'ready' })
  })
})
