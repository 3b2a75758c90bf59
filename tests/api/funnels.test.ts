import { beforeAll, describe, expect, it } from 'vitest'
import { REDIS_URL, client, seed, testServices } from '../helpers'

const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)

describe.each(kinds)('funnels (%s key/value store)', (kind) => {
  let call: ReturnType<typeof client>
  let fx: Awaited<ReturnType<typeof seed>>
  let services: Awaited<ReturnType<typeof testServices>>
  let goalId = ''
  const now = new Date('2026-11-22T12:00:00Z')

  beforeAll(async () => {
    services = await testServices({ kv: kind, now: () => now })
    fx = await seed(services)
    call = client(services)
    goalId = (await call('POST', '/api/v1/goals', { key: fx.a.write.key, body: { site_id: fx.a.site.id, type: 'event', matchValue: 'Signup' } })).json.id
  })

  const steps = () => [
    { type: 'page', value: '/pricing*' },
    { type: 'event', value: 'Start trial', label: 'Trial' },
    { type: 'goal', value: goalId },
  ]

  it('saves, lists, renames, replaces steps and deletes a funnel', async () => {
    const made = await call('POST', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.snippetId, name: 'Signup', steps: steps() } })
    expect(made.status).toBe(201)
    expect(made.json).toEqual({
      id: expect.any(String),
      name: 'Signup',
      steps: [
        { type: 'page', value: '/pricing*', label: null },
        { type: 'event', value: 'Start trial', label: 'Trial' },
        { type: 'goal', value: goalId, label: null },
      ],
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
    })
    const listed = await call('GET', `/api/v1/funnels?site_id=${fx.a.site.id}`, { key: fx.a.read.key })
    expect(listed).toMatchObject({ status: 200, json: { funnels: [made.json] } })

    const renamed = await call('PATCH', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, funnel_id: made.json.id, name: 'Trial signup' } })
    expect(renamed.json).toMatchObject({ name: 'Trial signup', steps: made.json.steps })
    const replaced = await call('PATCH', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, funnel_id: made.json.id, steps: [{ type: 'page', value: '/' }, { type: 'page', value: '/thanks' }] } })
    expect(replaced.json.steps).toEqual([{ type: 'page', value: '/', label: null }, { type: 'page', value: '/thanks', label: null }])
    expect(replaced.json.name).toBe('Trial signup')

    const deleted = await call('DELETE', `/api/v1/funnels?site_id=${fx.a.site.id}&funnel_id=${made.json.id}`, { key: fx.a.write.key })
    expect(deleted).toMatchObject({ status: 200, json: { deleted: true, id: made.json.id } })
    expect((await call('GET', `/api/v1/funnels?site_id=${fx.a.site.id}`, { key: fx.a.read.key })).json.funnels).toEqual([])
    expect((await call('DELETE', `/api/v1/funnels?site_id=${fx.a.site.id}&funnel_id=${made.json.id}`, { key: fx.a.write.key })).status).toBe(404)
    expect((await call('PATCH', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, funnel_id: made.json.id, name: 'x' } })).status).toBe(404)
  })

  it('keeps names unique per site (409), on create and on rename', async () => {
    const first = await call('POST', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, name: 'Checkout', steps: steps() } })
    const second = await call('POST', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, name: 'Checkout 2', steps: steps() } })
    const dup = await call('POST', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, name: 'Checkout', steps: steps() } })
    expect(dup.status).toBe(409)
    expect(dup.json.error).toMatch(/^name:/)
    expect((await call('PATCH', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, funnel_id: second.json.id, name: 'Checkout' } })).status).toBe(409)
    // the same name on another site is fine
    expect((await call('POST', '/api/v1/funnels', { key: fx.b.write.key, body: { site_id: fx.b.site.id, name: 'Checkout', steps: steps().slice(0, 2) } })).status).toBe(201)
    expect((await call('GET', `/api/v1/funnels?site_id=${fx.a.site.id}`, { key: fx.a.read.key })).json.funnels.map((f: { id: string }) => f.id)).toEqual([first.json.id, second.json.id])
  })

  it('refuses bad input with a 400 naming the field, and changes nothing', async () => {
    const before = await services.repositories.funnels.list(fx.a.site.id)
    const cases: [unknown, RegExp][] = [
      [{ site_id: fx.a.site.id, steps: steps() }, /^name/],
      [{ site_id: fx.a.site.id, name: 'x', steps: [steps()[0]] }, /^steps: a funnel has 2 to 8 steps/],
      [{ site_id: fx.a.site.id, name: 'x', steps: Array.from({ length: 9 }, () => steps()[0]) }, /^steps: a funnel has 2 to 8 steps/],
      [{ site_id: fx.a.site.id, name: 'x', steps: [{ type: 'click', value: 'a' }, steps()[0]] }, /^steps\.0\.type/],
      [{ site_id: fx.a.site.id, name: 'x', steps: [{ type: 'page', value: 'pricing' }, steps()[0]] }, /^steps\.0\.value: a page step is a path/],
      [{ site_id: fx.a.site.id, name: 'x', steps: [{ type: 'event', value: '' }, steps()[0]] }, /^steps\.0\.value/],
      [{ site_id: fx.a.site.id, name: 'x', steps: [steps()[0], { type: 'goal', value: 'Signup' }] }, /^steps\.1\.value: a goal step is a goal id/],
      [{ site_id: fx.a.site.id, name: 'x', steps: [steps()[0], { type: 'goal', value: crypto.randomUUID() }] }, /^steps\.1\.value: not a goal id of this site/],
      [{ site_id: fx.a.site.id, name: 'x', steps: [steps()[0], { ...steps()[1], extra: 1 }] }, /unknown field "extra"/],
      [{ site_id: fx.a.site.id, name: 'x', steps: 'all' }, /^steps/],
    ]
    for (const [body, message] of cases) {
      const res = await call('POST', '/api/v1/funnels', { key: fx.a.write.key, body })
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.json.error, JSON.stringify(body)).toMatch(message)
    }
    const patch = await call('PATCH', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, funnel_id: before[0].id } })
    expect(patch.status).toBe(400)
    expect(patch.json.error).toMatch(/at least one of name and steps/)
    const badGoal = await call('PATCH', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, funnel_id: before[0].id, name: 'renamed', steps: [steps()[0], { type: 'goal', value: crypto.randomUUID() }] } })
    expect(badGoal.status).toBe(400)
    expect(await services.repositories.funnels.list(fx.a.site.id)).toEqual(before)
  })

  it("another organization's funnels, goals and sites are 404 or unknown; read keys cannot write", async () => {
    const theirGoal = (await call('POST', '/api/v1/goals', { key: fx.b.write.key, body: { site_id: fx.b.site.id, type: 'event', matchValue: 'Theirs' } })).json.id
    const theirFunnel = (await services.repositories.funnels.list(fx.b.site.id))[0]
    // a goal of another site is not a goal of this one
    const foreignGoal = await call('POST', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: fx.a.site.id, name: 'y', steps: [steps()[0], { type: 'goal', value: theirGoal }] } })
    expect(foreignGoal.status).toBe(400)
    // their funnel under my site is not found, as an unknown id; their site is the same 404 as none
    const unknown = await call('DELETE', `/api/v1/funnels?site_id=${fx.a.site.id}&funnel_id=${crypto.randomUUID()}`, { key: fx.a.write.key })
    const foreign = await call('DELETE', `/api/v1/funnels?site_id=${fx.a.site.id}&funnel_id=${theirFunnel.id}`, { key: fx.a.write.key })
    expect(foreign).toMatchObject({ status: 404, json: unknown.json })
    for (const ref of [fx.b.site.id, fx.b.site.snippetId]) {
      expect((await call('GET', `/api/v1/funnels?site_id=${ref}`, { key: fx.a.read.key })).status).toBe(404)
      expect((await call('DELETE', `/api/v1/funnels?site_id=${ref}&funnel_id=${theirFunnel.id}`, { key: fx.a.write.key })).status).toBe(404)
      expect((await call('PATCH', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: ref, funnel_id: theirFunnel.id, name: 'mine' } })).status).toBe(404)
      expect((await call('POST', '/api/v1/funnels', { key: fx.a.write.key, body: { site_id: ref, name: 'mine', steps: steps() } })).status).toBe(404)
    }
    expect(await services.repositories.funnels.list(fx.b.site.id)).toEqual([theirFunnel])
    expect((await call('POST', '/api/v1/funnels', { key: fx.a.read.key, body: { site_id: fx.a.site.id, name: 'z', steps: steps() } })).status).toBe(403)
  })
})
