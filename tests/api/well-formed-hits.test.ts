import { beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { wellFormedInput, wellFormedText } from '../../lib/ingest/well-formed'
import { collectLines, type Harness, harness } from '../helpers'

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'
const GPTBOT = 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)'

describe('text is repaired where a hit comes in', () => {
  it('a lone surrogate or control character becomes U+FFFD, one code unit for one, and nothing else changes', () => {
    const unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c))
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 60 }), (text) => {
        const repaired = wellFormedText(text)
        expect(repaired.isWellFormed()).toBe(true)
        expect(repaired.length).toBe(text.length)
        for (let i = 0; i < text.length; i++) {
          const code = text.charCodeAt(i)
          const high = code >= 0xd800 && code <= 0xdbff
          const low = code >= 0xdc00 && code <= 0xdfff
          const paired = (high && /[\udc00-\udfff]/.test(text[i + 1] ?? '')) || (low && /[\ud800-\udbff]/.test(text[i - 1] ?? ''))
          const control = (code < 0x20 && code !== 9 && code !== 10 && code !== 13) || (code >= 0x7f && code <= 0x9f)
          const replaced = control || ((high || low) && !paired)
          expect(repaired[i]).toBe(replaced ? '\ufffd' : text[i])
        }
      }),
    )
  })

  it('repairs keys and values of nested objects and arrays in place', () => {
    const input = { 'a\ud800': ['\u0000', { b: 'x\udc00' }], ok: 'fine\tline\n' }
    expect(wellFormedInput(input)).toEqual({ ok: 'fine\tline\n', 'a\ufffd': ['\ufffd', { b: 'x\ufffd' }] })
  })
})

/** Every field the outside probe poisoned the store with, on every ingest path: each hit kept, repaired, and the next stored. */
describe('hits holding lone surrogates are stored repaired, and collection goes on', () => {
  let t: Harness
  beforeAll(async () => {
    t = await harness()
  })

  const post = async (body: unknown, key?: string, ip = '8.8.4.4') => {
    const res = await t.app.request(`http://api.test${key ? '/api/v1/collect' : '/api/event'}`, {
      method: 'POST',
      headers: {
        'content-type': key ? 'application/json' : 'text/plain',
        'user-agent': FIREFOX,
        'x-forwarded-for': ip,
        ...(key ? { authorization: `Bearer ${key}` } : {}),
      },
      // JSON.stringify writes a lone surrogate as the escape \ud800, as the probe sent it
      body: JSON.stringify(body),
    })
    expect(res.status).toBeLessThan(500)
    return res
  }
  const stored = (table: string, path: string, columns: string) =>
    t.clickhouse.query<Record<string, string>>(`SELECT ${columns} FROM ${table} WHERE site_id = {s:UUID} AND pathname = {p:String}`, {
      s: t.a.site.id,
      p: path,
    })

  it("Plausible's payload with a lone surrogate in the name: 202, stored with U+FFFD", async () => {
    const res = await post({ n: 'x\ud800', u: `https://${t.a.site.domain}/p`, d: t.a.site.domain })
    expect(res.status).toBe(202)
    expect(res.headers.get('x-dropped')).toBeNull()
    expect(await stored('events', '/p', 'name')).toEqual([{ name: 'x\ufffd' }])
  })

  it('our payload with lone surrogates in name, a props value, error.message and referrer', async () => {
    const site = t.a.site.snippetId
    const url = (path: string) => `https://${t.a.site.domain}${path}`
    expect((await post({ site, name: 'signup\udc00', url: url('/name') })).status).toBe(202)
    expect((await post({ site, name: 'pageview', url: url('/props'), props: { plan: 'pro\ud800', 'k\udbff': 'v' } })).status).toBe(202)
    expect((await post({ site, name: 'error', url: url('/error'), error: { message: 'boom\ud800', stack: 'at x\u0000' } })).status).toBe(
      202,
    )
    // another visitor: a visit's referrer is its first hit's
    expect(
      (await post({ site, name: 'pageview', url: url('/ref'), referrer: 'https://news.example/\ud800' }, undefined, '9.9.9.9')).status,
    ).toBe(202)
    expect(await stored('events', '/name', 'name')).toEqual([{ name: 'signup\ufffd' }])
    expect(await stored('events', '/props', "props['plan'] AS plan, props['k\ufffd'] AS key")).toEqual([{ plan: 'pro\ufffd', key: 'v' }])
    expect(await stored('events', '/error', 'error_message')).toEqual([{ error_message: 'boom\ufffd' }])
    expect((await stored('events', '/ref', 'referrer'))[0].referrer).toContain('news.example')
    // and the next hit, a plain one, is stored
    expect((await post({ site, name: 'pageview', url: url('/after') })).status).toBe(202)
    expect(await stored('events', '/after', 'count() AS n')).toEqual([{ n: '1' }])
  })

  it('a value cut to its column never splits a surrogate pair, and a user agent with C1 controls is repaired', async () => {
    const site = t.a.site.snippetId
    // 499 characters and an emoji: a cut at 500 code units would keep half of the emoji
    const campaign = `${'a'.repeat(499)}%F0%9F%98%80`
    const res = await post({ site, name: 'pageview', url: `https://${t.a.site.domain}/cut?utm_campaign=${campaign}` }, undefined, '7.7.7.7')
    expect(res.status).toBe(202)
    const [row] = await stored('events', '/cut', 'utm_campaign')
    expect(row.utm_campaign).toBe('a'.repeat(499))
    const ua = await t.app.request('http://api.test/api/event', {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'user-agent': `${FIREFOX}\u0085`, 'x-forwarded-for': '6.6.6.6' },
      body: JSON.stringify({ site, name: 'pageview', url: `https://${t.a.site.domain}/c1` }),
    })
    expect(ua.status).toBe(202)
    expect(await stored('events', '/c1', 'count() AS n')).toEqual([{ n: '1' }])
  })

  it('/api/v1/collect with lone surrogates in the path, user agent and referrer', async () => {
    const res = await post(
      { site_id: t.a.site.snippetId, events: [{ path: '/bot\ud800', userAgent: `${GPTBOT}\udc00`, referrer: 'https://x.example/\ud800' }] },
      t.a.write.key,
    )
    expect(await res.json()).toEqual({ ingested: 1, dropped: 0 })
    expect(await stored('bot_events', '/bot\ufffd', 'user_agent')).toEqual([{ user_agent: `${GPTBOT}\ufffd` }])
  })

  it('the raw-hit import with a lone surrogate in a line', async () => {
    const line = JSON.stringify({
      timestamp: new Date(Date.now() - 3600_000).toISOString(),
      site: t.a.site.snippetId,
      name: 'imported\ud800',
      url: `https://${t.a.site.domain}/imported`,
      ip: '203.0.113.5',
      userAgent: FIREFOX,
    })
    expect((await collectLines([line], t.services.ingestor)).imported).toBe(1)
    expect(await stored('events', '/imported', 'name')).toEqual([{ name: 'imported\ufffd' }])
  })
})
