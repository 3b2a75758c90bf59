import { describe, expect, it } from 'vitest'
import { parseHit } from '../../lib/ingest/hit'
import { browserHitSchema, importHitSchema } from '../../lib/ingest/hit-schema'

const importHit = importHitSchema
const browserHit = browserHitSchema

const base = () => ({
  site: 'abc123',
  name: 'pageview',
  url: 'https://example.com/a?b=1',
  referrer: 'https://www.google.com/',
  screenWidth: 1280,
})
const importBase = () => ({ ...base(), timestamp: '2026-11-20T10:00:00.123Z', ip: '203.0.113.7', userAgent: 'Mozilla/5.0' })

// values each field is tried with: valid ones, edge ones, and wrong ones of every JSON type
const VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  30,
  100,
  100_001,
  86_400_001,
  1e308,
  Number.MAX_SAFE_INTEGER + 2,
  '',
  ' ',
  '  Signup  ',
  'x'.repeat(64),
  'x'.repeat(65),
  'x'.repeat(121),
  'x'.repeat(1001),
  'EUR',
  'euro',
  '19.90',
  '-3',
  '1.23456',
  'ten',
  'https://example.com/',
  'HTTP://EXAMPLE.COM/x',
  ' https://x.com/ ',
  'http:example.com',
  'ftp://x.com/',
  'https://',
  'not a url',
  `https://x.com/${'a'.repeat(4000)}`,
  '2026-11-20T10:00:00Z',
  '2026-11-20T10:00:00+05:30',
  '2026-02-30T10:00:00Z',
  '2026-11-20 10:00:00',
  '2026-11-20T10:00Z',
  '8.8.8.8',
  '256.1.1.1',
  '2001:db8::1',
  '::ffff:1.2.3.4',
  'LCP',
  'XYZ',
  'good',
  'poor',
  'meh',
  [],
  [1, 'a'],
  {},
  { a: 1 },
  { a: 'x', b: true, c: 2.5 },
  { a: { nested: 1 } },
  { '': 1 },
  Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`k${i}`, i])),
  { amount: '19.90', currency: 'EUR' },
  { amount: 5, currency: 'USD' },
  { amount: 'ten', currency: 'EUR' },
  { amount: '1', currency: 'EUR', extra: 1 },
  { selector: 'a.buy', text: 'Buy', tag: 'a', href: 'https://shop.example/', interactive: true, dead: false },
  { selector: 'div.hero', tag: 'div', x: 0.25, y: 0.5, docWidth: 1280, docHeight: 4000, rage: true },
  { x: 0, y: 1, docWidth: 1, docHeight: 1_000_000 },
  { x: 1.5, y: 0.5, docWidth: 1280, docHeight: 4000 },
  { x: 0.5, y: 0.5, docWidth: 0, docHeight: 4000 },
  { x: 0.5, y: 0.5, docWidth: 12.5, docHeight: 4000 },
  { x: 0.5, y: 0.5 },
  { rage: 'yes' },
  { selector: 1 },
  { dead: 'yes' },
  { zzz: 1 },
  { message: 'boom', name: 'TypeError', line: 3 },
  { message: 'boom', line: -1 },
  { name: 'E' },
  { name: 'LCP', value: 1200, rating: 'good' },
  { name: 'CLS', value: 0.1, attribution: { largestShiftTarget: 'div', n: 2, ok: true, none: null } },
  { name: 'INP', value: -1 },
  { name: 'FCP', value: 1, attribution: { x: [] } },
  { name: 'TTFB', value: 1, rating: 'meh' },
  { ms: 1000, scroll: 50 },
  { ms: 1000, scroll: 101 },
  { ms: 1.5, scroll: 1 },
  { ms: 1 },
  { selector: 'form#signup', action: '/signup' },
  { action: 5 },
]
const FIELDS = [
  'site',
  'name',
  'url',
  'referrer',
  'screenWidth',
  'props',
  'revenue',
  'interactive',
  'click',
  'error',
  'vital',
  'engagement',
  'form',
  'timestamp',
  'ip',
  'userAgent',
  'zzz',
]

describe('parseHit', () => {
  it('accepts and rejects what the reference schema does, and returns the same hit', () => {
    let seed = 11
    const random = (n: number) => (seed = (seed * 48271) % 2147483647) % n
    let accepted = 0
    let rejected = 0
    for (let i = 0; i < 10_000; i++) {
      const from = i % 2 ? 'import' : 'browser'
      const payload: Record<string, unknown> = from === 'import' ? importBase() : base()
      for (let j = 0, n = 1 + random(3); j < n; j++) {
        const field = FIELDS[random(FIELDS.length)]
        if (random(8) === 0) delete payload[field]
        else payload[field] = structuredClone(VALUES[random(VALUES.length)])
      }
      const reference = (from === 'import' ? importHit : browserHit).safeParse(structuredClone(payload))
      const result = parseHit(structuredClone(payload), from)
      const context = JSON.stringify({ from, payload, reference: reference.success ? 'ok' : reference.error.issues[0] })
      expect(typeof result === 'string' ? 'rejected' : 'accepted', context).toBe(reference.success ? 'accepted' : 'rejected')
      if (reference.success) {
        expect(result, context).toEqual(reference.data)
        accepted++
      } else {
        // the message names a field of the payload, or the body
        expect(result as string, context).toMatch(
          /^(body|site|name|url|referrer|screenWidth|props|revenue|interactive|click|error|vital|engagement|form|timestamp|ip|userAgent)(\.|:)|^unknown field/,
        )
        rejected++
      }
    }
    // both outcomes were exercised in earnest
    expect(accepted).toBeGreaterThan(600)
    expect(rejected).toBeGreaterThan(3000)
  })

  it('names the problem', () => {
    expect(parseHit([base()], 'browser')).toBe('body: expected a JSON object')
    expect(parseHit({ ...base(), extra: 1, more: 2 }, 'browser')).toBe('unknown fields "extra", "more"')
    expect(parseHit({ ...importBase() }, 'browser')).toBe('unknown fields "timestamp", "ip", "userAgent"')
    expect(parseHit({ ...base(), url: 'ftp://x.com/' }, 'browser')).toBe('url: must be an absolute http(s) URL')
    expect(parseHit({ ...base(), name: '   ' }, 'browser')).toBe('name: must not be empty')
    expect(parseHit({ ...base(), click: { zzz: 1 } }, 'browser')).toBe('click: unknown field "zzz"')
    expect(parseHit({ ...base(), revenue: { amount: 'ten', currency: 'EUR' } }, 'browser')).toBe('revenue.amount: must be a decimal amount')
    expect(parseHit({ ...base(), props: { plan: { tier: 1 } } }, 'browser')).toBe('props.plan: expected a string, number or boolean')
    expect(parseHit({ ...base(), engagement: { ms: 5, scroll: 101 } }, 'browser')).toBe('engagement.scroll: must be from 0 to 100')
    expect(parseHit({ ...importBase(), ip: '256.1.1.1' }, 'import')).toBe('ip: expected an IPv4 or IPv6 address')
    expect(parseHit({ ...importBase(), timestamp: '2026-11-20 10:00:00' }, 'import')).toMatch(/^timestamp: expected an ISO 8601/)
    expect(parseHit({ ...base(), name: '  Signup ' }, 'browser')).toMatchObject({ name: 'Signup' })
    expect(parseHit({ ...base(), interactive: false }, 'browser')).toBe('interactive: only on a custom event')
    expect(parseHit({ ...base(), name: 'Autoplay', interactive: 0 }, 'browser')).toBe('interactive: expected true or false')
    expect(parseHit({ ...base(), name: 'Autoplay', interactive: false }, 'browser')).toMatchObject({ interactive: false })
  })
})
