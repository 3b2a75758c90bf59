import { describe, expect, it } from 'vitest'
import { resolveRange } from '../../lib/reports/query/range'
import { planOf } from '../../lib/reports/query/run'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
import { createGoal } from '../../lib/sites/goals'
import { getOk } from '../helpers'
import { NOW, type Ref, type RefEvent, round } from './report-reference'
import { referenceSite } from './reference-site'

/** Each goal's converters, completions, rate over all visitors of [from, to) and revenue, counted over the reference events. */
function expectedConversions(ref: Ref, from: string, to: string) {
  const inWindow = ref.events.filter((e) => e.ts >= Date.parse(from) && e.ts < Date.parse(to))
  const all = new Set(inWindow.map((e) => e.visitor)).size
  const goal = (converts: (e: RefEvent) => boolean) => {
    const conversions = inWindow.filter(converts)
    const visitors = new Set(conversions.map((e) => e.visitor)).size
    return { visitors, conversions: conversions.length, conversionRate: all ? round(visitors / all, 4) : 0 }
  }
  const signup = goal((e) => e.name === 'Signup')
  const proSignups = inWindow.filter((e) => e.name === 'Signup' && e.plan === 'pro').length
  return [
    ['Signup', { ...signup, revenue: { amount: round(proSignups * 10.5, 2), currency: 'EUR' } }],
    ['Visit /blog/*', goal((e) => e.kind === 'pageview' && e.path.startsWith('/blog/'))],
  ]
}

describe('goal conversions over rolled-up days', () => {
  it('rate converters over the visitors the rollup holds, and answer what they answer from events alone', async () => {
    const tz = 'Europe/Berlin'
    const { services, call, key, site, ref } = await referenceSite('Goal rollup', 'goals.rollup.test', tz, 11)
    // goals defined after the data they count
    await createGoal(services.repositories, site.id, { site_id: site.id, type: 'event', matchValue: 'Signup', currency: 'EUR' }, NOW)
    await createGoal(services.repositories, site.id, { site_id: site.id, type: 'page', matchValue: '/blog/*' }, NOW)
    const windows: [string, string, string][] = [
      ['range=30d', '2026-10-24T00:00:00+02:00', '2026-11-23T00:00:00+01:00'],
      ['range=7d', '2026-11-16T00:00:00+01:00', '2026-11-23T00:00:00+01:00'],
      ['range=custom&from=2026-10-25&to=2026-11-20', '2026-10-25T00:00:00+02:00', '2026-11-21T00:00:00+01:00'],
    ]
    const conversions = async () =>
      Promise.all(
        windows.map(async ([range]) =>
          (await getOk(call, `/api/v1/goals?site_id=${site.id}&${range}`, key)).goals.map(
            (g: { name: string; visitors: number; conversions: number; conversionRate: number; revenue?: unknown }) => [
              g.name,
              {
                visitors: g.visitors,
                conversions: g.conversions,
                conversionRate: g.conversionRate,
                ...(g.revenue ? { revenue: g.revenue } : {}),
              },
            ],
          ),
        ),
      )
    const expected = windows.map(([, from, to]) => expectedConversions(ref, from, to))
    expect(expected[0].every(([, c]) => typeof c !== 'string' && c.visitors > 0)).toBe(true)

    // before the refresh, every day from events
    expect(await conversions()).toEqual(expected)
    const goalRead = { kind: 'breakdown' as const, property: 'goal' }
    const query = {
      siteId: site.id,
      range: resolveRange({ range: '30d' }, tz, NOW),
      filters: [],
      goals: await services.repositories.goals.list(site.id),
      limit: 1000,
      now: NOW,
    }
    expect((await planOf(services.clickhouse, query, goalRead)).plan.table).toBe('events')

    // after it, the visitors of the finished days from the rollup: the same answers
    await refreshRollups(services.clickhouse, services.repositories, NOW, 200)
    const { plan } = await planOf(services.clickhouse, { ...query, range: resolveRange({ range: '30d' }, tz, NOW) }, goalRead)
    expect(plan.table).toBe('rollup')
    expect(plan.table === 'rollup' && plan.rolled.days.length).toBeGreaterThan(3)
    expect(await conversions()).toEqual(expected)

    // a filtered goal read keeps counting its whole from the selected events
    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'path', operator: 'is', value: ['/docs'] }]))
    const filtered = await getOk(call, `/api/v1/goals?site_id=${site.id}&range=30d&filters=${filters}`, key)
    const [, from, to] = windows[0]
    const docsSignups = ref.events.filter(
      (e) => e.ts >= Date.parse(from) && e.ts < Date.parse(to) && e.path === '/docs' && e.name === 'Signup',
    )
    expect(docsSignups.length).toBeGreaterThan(0)
    expect([filtered.goals[0].visitors, filtered.goals[0].conversions]).toEqual([
      new Set(docsSignups.map((e) => e.visitor)).size,
      docsSignups.length,
    ])
  }, 180_000)
})
