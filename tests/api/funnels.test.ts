import { beforeAll, describe, expect, it } from 'vitest'
import { harness, REDIS_URL, type Harness } from '../helpers'

const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)

describe.each(kinds)('funnels (%s key/value store)', (kind) => {
  let t: Harness
  let goalId = ''
  const now = new Date('2026-11-22T12:00:00Z')

  beforeAll(async () => {
    t = await harness({ kv: kind, now: () => now })
    goalId = (
      await t.call('POST', '/api/v1/goals', { key: t.a.write.key, body: { site_id: t.a.site.id, type: 'event', matchValue: 'Signup' } })
    ).json.id
  })

  const steps = () => [
    { type: 'page', value: '/pricing*' },
    { type: 'event', value: 'Start trial', label: 'Trial' },
    { type: 'goal', value: goalId },
  ]

  it('saves, lists, renames, replaces steps and deletes a funnel', async () => {
    const made = await t.call('POST', '/api/v1/funnels', {
      key: t.a.write.key,
      body: { site_id: t.a.site.snippetId, name: 'Signup', steps: steps() },
    })
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
    const listed = await t.call('GET', `/api/v1/funnels?site_id=${t.a.site.id}`, { key: t.a.read.key })
    expect(listed).toMatchObject({ status: 200, json: { funnels: [made.json] } })

    const renamed = await t.call('PATCH', '/api/v1/funnels', {
      key: t.a.write.key,
      body: { site_id: t.a.site.id, funnel_id: made.json.id, name: 'Trial signup' },
    })
    expect(renamed.json).toMatchObject({ name: 'Trial signup', steps: made.json.steps })
    const replaced = await t.call('PATCH', '/api/v1/funnels', {
      key: t.a.write.key,
      body: {
        site_id: t.a.site.id,
        funnel_id: made.json.id,
        steps: [
          { type: 'page', value: '/' },
          { type: 'page', value: '/thanks' },
        ],
      },
    })
    expect(replaced.json.steps).toEqual([
      { type: 'page', value: '/', label: null },
      { type: 'page', value: '/thanks', label: null },
    ])
    expect(replaced.json.name).toBe('Trial signup')

    const deleted = await t.call('DELETE', `/api/v1/funnels?site_id=${t.a.site.id}&funnel_id=${made.json.id}`, { key: t.a.write.key })
    expect(deleted).toMatchObject({ status: 200, json: { deleted: true, id: made.json.id } })
    expect((await t.call('GET', `/api/v1/funnels?site_id=${t.a.site.id}`, { key: t.a.read.key })).json.funnels).toEqual([])
    expect(
      (await t.call('DELETE', `/api/v1/funnels?site_id=${t.a.site.id}&funnel_id=${made.json.id}`, { key: t.a.write.key })).status,
    ).toBe(404)
    expect(
      (await t.call('PATCH', '/api/v1/funnels', { key: t.a.write.key, body: { site_id: t.a.site.id, funnel_id: made.json.id, name: 'x' } }))
        .status,
    ).toBe(404)
  })

  it('keeps names unique per site (409), on create and on rename', async () => {
    const first = await t.call('POST', '/api/v1/funnels', {
      key: t.a.write.key,
      body: { site_id: t.a.site.id, name: 'Checkout', steps: steps() },
    })
    const second = await t.call('POST', '/api/v1/funnels', {
      key: t.a.write.key,
      body: { site_id: t.a.site.id, name: 'Checkout 2', steps: steps() },
    })
    const dup = await t.call('POST', '/api/v1/funnels', {
      key: t.a.write.key,
      body: { site_id: t.a.site.id, name: 'Checkout', steps: steps() },
    })
    expect(dup.status).toBe(409)
    expect(dup.json.error).toMatch(/^name:/)
    expect(
      (
        await t.call('PATCH', '/api/v1/funnels', {
          key: t.a.write.key,
          body: { site_id: t.a.site.id, funnel_id: second.json.id, name: 'Checkout' },
        })
      ).status,
    ).toBe(409)
    // the same name on another site is fine
    expect(
      (
        await t.call('POST', '/api/v1/funnels', {
          key: t.b.write.key,
          body: { site_id: t.b.site.id, name: 'Checkout', steps: steps().slice(0, 2) },
        })
      ).status,
    ).toBe(201)
    expect(
      (await t.call('GET', `/api/v1/funnels?site_id=${t.a.site.id}`, { key: t.a.read.key })).json.funnels.map((f: { id: string }) => f.id),
    ).toEqual([first.json.id, second.json.id])
  })

  it('refuses bad input with a 400 naming the field, and changes nothing', async () => {
    const before = await t.repositories.funnels.list(t.a.site.id)
    const cases: [unknown, RegExp][] = [
      [{ site_id: t.a.site.id, steps: steps() }, /^name/],
      [{ site_id: t.a.site.id, name: 'x', steps: [steps()[0]] }, /^steps: a funnel has 2 to 8 steps/],
      [{ site_id: t.a.site.id, name: 'x', steps: Array.from({ length: 9 }, () => steps()[0]) }, /^steps: a funnel has 2 to 8 steps/],
      [{ site_id: t.a.site.id, name: 'x', steps: [{ type: 'click', value: 'a' }, steps()[0]] }, /^steps\.0\.type/],
      [
        { site_id: t.a.site.id, name: 'x', steps: [{ type: 'page', value: 'pricing' }, steps()[0]] },
        /^steps\.0\.value: a page step is a path/,
      ],
      [{ site_id: t.a.site.id, name: 'x', steps: [{ type: 'event', value: '' }, steps()[0]] }, /^steps\.0\.value/],
      [
        { site_id: t.a.site.id, name: 'x', steps: [steps()[0], { type: 'goal', value: 'Signup' }] },
        /^steps\.1\.value: a goal step is a goal id/,
      ],
      [
        { site_id: t.a.site.id, name: 'x', steps: [steps()[0], { type: 'goal', value: crypto.randomUUID() }] },
        /^steps\.1\.value: not a goal id of this site/,
      ],
      [{ site_id: t.a.site.id, name: 'x', steps: [steps()[0], { ...steps()[1], extra: 1 }] }, /unknown field "extra"/],
      [{ site_id: t.a.site.id, name: 'x', steps: 'all' }, /^steps/],
    ]
    for (const [body, message] of cases) {
      const res = await t.call('POST', '/api/v1/funnels', { key: t.a.write.key, body })
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.json.error, JSON.stringify(body)).toMatch(message)
    }
    const patch = await t.call('PATCH', '/api/v1/funnels', { key: t.a.write.key, body: { site_id: t.a.site.id, funnel_id: before[0].id } })
    expect(patch.status).toBe(400)
    expect(patch.json.error).toMatch(/at least one of name and steps/)
    const badGoal = await t.call('PATCH', '/api/v1/funnels', {
      key: t.a.write.key,
      body: {
        site_id: t.a.site.id,
        funnel_id: before[0].id,
        name: 'renamed',
        steps: [steps()[0], { type: 'goal', value: crypto.randomUUID() }],
      },
    })
    expect(badGoal.status).toBe(400)
    expect(await t.repositories.funnels.list(t.a.site.id)).toEqual(before)
  })

  it("another organization's funnels, goals and sites are 404 or unknown; read keys cannot write", async () => {
    const theirGoal = (
      await t.call('POST', '/api/v1/goals', { key: t.b.write.key, body: { site_id: t.b.site.id, type: 'event', matchValue: 'Theirs' } })
    ).json.id
    const theirFunnel = (await t.repositories.funnels.list(t.b.site.id))[0]
    // a goal of another site is not a goal of this one
    const foreignGoal = await t.call('POST', '/api/v1/funnels', {
      key: t.a.write.key,
      body: { site_id: t.a.site.id, name: 'y', steps: [steps()[0], { type: 'goal', value: theirGoal }] },
    })
    expect(foreignGoal.status).toBe(400)
    // their funnel under my site is not found, as an unknown id; their site is the same 404 as none
    const unknown = await t.call('DELETE', `/api/v1/funnels?site_id=${t.a.site.id}&funnel_id=${crypto.randomUUID()}`, {
      key: t.a.write.key,
    })
    const foreign = await t.call('DELETE', `/api/v1/funnels?site_id=${t.a.site.id}&funnel_id=${theirFunnel.id}`, { key: t.a.write.key })
    expect(foreign).toMatchObject({ status: 404, json: unknown.json })
    for (const ref of [t.b.site.id, t.b.site.snippetId]) {
      expect((await t.call('GET', `/api/v1/funnels?site_id=${ref}`, { key: t.a.read.key })).status).toBe(404)
      expect((await t.call('DELETE', `/api/v1/funnels?site_id=${ref}&funnel_id=${theirFunnel.id}`, { key: t.a.write.key })).status).toBe(
        404,
      )
      expect(
        (await t.call('PATCH', '/api/v1/funnels', { key: t.a.write.key, body: { site_id: ref, funnel_id: theirFunnel.id, name: 'mine' } }))
          .status,
      ).toBe(404)
      expect(
        (await t.call('POST', '/api/v1/funnels', { key: t.a.write.key, body: { site_id: ref, name: 'mine', steps: steps() } })).status,
      ).toBe(404)
    }
    expect(await t.repositories.funnels.list(t.b.site.id)).toEqual([theirFunnel])
    expect(
      (await t.call('POST', '/api/v1/funnels', { key: t.a.read.key, body: { site_id: t.a.site.id, name: 'z', steps: steps() } })).status,
    ).toBe(403)
  })
})
