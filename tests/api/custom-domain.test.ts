import { beforeAll, describe, expect, it } from 'vitest'
import type { DnsResolver } from '../../lib/ingest/bots'
import { newSite } from '../../lib/sites/sites'
import { harness, type Harness } from '../helpers'

/** A local fake of DNS: CNAME and address records by name; a name in `failing` makes the resolver fail. */
function fakeDns() {
  const cnames = new Map<string, string[]>()
  const addresses = new Map<string, string[]>()
  const failing = new Set<string>()
  const answer = async <T>(name: string, records: Map<string, T[]>) => {
    if (failing.has(name)) throw new Error('SERVFAIL')
    return records.get(name) ?? []
  }
  const resolver: Required<DnsResolver> = {
    reverse: async () => [],
    lookup: (name) => answer(name, addresses),
    cname: (name) => answer(name, cnames),
  }
  return { resolver, cnames, addresses, failing }
}

describe('custom tracking domain', () => {
  let t: Harness
  const dns = fakeDns()

  beforeAll(async () => {
    t = await harness({ with: { dns: dns.resolver } })
  })

  const addSite = async () => {
    const site = newSite({ domain: `cd-${crypto.randomUUID().slice(0, 8)}.example.com` }, t.a.org.id, t.services.now())
    await t.repositories.sites.create(site)
    return site
  }
  const path = (ref: string) => `/api/v1/sites/${ref}/custom-domain`
  const snippetHost = async (ref: string) =>
    /src="https:\/\/([^/]+)\//.exec((await t.call('GET', `/api/v1/sites/${ref}`, { key: t.a.read.key })).json.snippet)![1]

  it('has none at first', async () => {
    const site = await addSite()
    const res = await t.call('GET', path(site.snippetId), { key: t.a.read.key })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({
      customDomain: null,
      cnameTarget: 'api.test',
      status: 'none',
      addedAt: null,
      verifiedAt: null,
      trackingDomain: 'api.test',
    })
  })

  it('attaches a subdomain, keeps it out of the snippet until the CNAME points here, then uses it', async () => {
    const site = await addSite()
    const domain = `stats.${site.domain}`
    const attached = await t.call('POST', path(site.id), { key: t.a.write.key, body: { domain: `Stats.${site.domain}.` } })
    expect(attached.status).toBe(200)
    expect(attached.json).toMatchObject({
      customDomain: domain,
      status: 'pending',
      trackingDomain: 'api.test',
      verifiedAt: null,
      detail: `add a CNAME record: ${domain} -> api.test`,
    })
    expect(await snippetHost(site.id)).toBe('api.test')
    dns.cnames.set(domain, ['elsewhere.example.net.'])
    expect((await t.call('GET', path(site.id), { key: t.a.read.key })).json).toMatchObject({
      status: 'wrong_target',
      trackingDomain: 'api.test',
    })
    dns.cnames.set(domain, ['API.test.'])
    const verified = await t.call('GET', path(site.id), { key: t.a.read.key })
    expect(verified.json).toMatchObject({ status: 'verified', trackingDomain: domain, verifiedAt: expect.any(String) })
    expect(verified.json.snippet).toBe(`<script defer data-site="${site.snippetId}" src="https://${domain}/js/script.js"></script>`)
    expect(await snippetHost(site.id)).toBe(domain)
    // a DNS failure changes nothing; a record pointing elsewhere takes it out of the snippet again
    dns.failing.add(domain)
    expect((await t.call('GET', path(site.id), { key: t.a.read.key })).json).toMatchObject({ status: 'error', trackingDomain: domain })
    dns.failing.delete(domain)
    dns.cnames.set(domain, ['elsewhere.example.net'])
    expect((await t.call('GET', path(site.id), { key: t.a.read.key })).json).toMatchObject({
      status: 'wrong_target',
      trackingDomain: 'api.test',
    })
    expect(await snippetHost(site.id)).toBe('api.test')
    // detaching goes back to none
    dns.cnames.set(domain, ['api.test'])
    await t.call('GET', path(site.id), { key: t.a.read.key })
    const detached = await t.call('DELETE', path(site.id), { key: t.a.write.key })
    expect(detached.json).toMatchObject({ customDomain: null, status: 'none', trackingDomain: 'api.test' })
    expect(await snippetHost(site.id)).toBe('api.test')
  })

  it('verifies a flattened CNAME by its addresses', async () => {
    const site = await addSite()
    const domain = `t.${site.domain}`
    dns.addresses.set('api.test', ['198.51.100.7', '2001:db8::7'])
    dns.addresses.set(domain, ['198.51.100.7'])
    expect((await t.call('POST', path(site.id), { key: t.a.write.key, body: { domain } })).json).toMatchObject({
      status: 'verified',
      trackingDomain: domain,
    })
  })

  it('is attached and detached through the site settings too', async () => {
    const site = await addSite()
    const domain = `go.${site.domain}`
    dns.cnames.set(domain, ['api.test'])
    const patched = await t.call('PATCH', `/api/v1/sites/${site.id}`, {
      key: t.a.write.key,
      body: { customDomain: domain, isPublic: true },
    })
    expect(patched.status).toBe(200)
    expect(patched.json).toMatchObject({ tracking: { customDomain: domain }, sharing: { isPublic: true } })
    expect(patched.json.snippet).toContain(`https://${domain}/js/script.js`)
    expect((await t.call('GET', path(site.id), { key: t.a.read.key })).json).toMatchObject({ customDomain: domain, status: 'verified' })
    const bad = await t.call('PATCH', `/api/v1/sites/${site.id}`, {
      key: t.a.write.key,
      body: { customDomain: 'stats.other.com', isPublic: false },
    })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/^customDomain: must be a subdomain of/)
    expect((await t.repositories.sites.get(site.id))!.sharing.isPublic).toBe(true)
    const cleared = await t.call('PATCH', `/api/v1/sites/${site.id}`, { key: t.a.write.key, body: { customDomain: null } })
    expect(cleared.json.tracking.customDomain).toBeNull()
    expect((await t.call('GET', path(site.id), { key: t.a.read.key })).json.status).toBe('none')
    // an unverified one stays out of the snippet
    const pending = await t.call('PATCH', `/api/v1/sites/${site.id}`, { key: t.a.write.key, body: { customDomain: `new.${site.domain}` } })
    expect(pending.json.tracking.customDomain).toBeNull()
  })

  it('goes with its site', async () => {
    const site = await addSite()
    await t.call('POST', path(site.id), { key: t.a.write.key, body: { domain: `x.${site.domain}` } })
    expect((await t.call('DELETE', `/api/v1/sites/${site.id}?confirm=${site.domain}`, { key: t.a.write.key })).status).toBe(200)
    expect(await t.repositories.siteChecks.customDomain(site.id)).toBeNull()
  })

  const bad: [string, unknown, RegExp][] = [
    ['another domain', { domain: 'stats.example.net' }, /domain: must be a subdomain of/],
    ['the site domain itself', { domain: 'SITE' }, /domain: must be a subdomain of/],
    ['a lookalike suffix', { domain: 'evilSITE' }, /domain: must be a subdomain of/],
    ['a URL', { domain: 'https://stats.SITE/' }, /domain: must be a bare hostname/],
    ['no domain', {}, /domain/],
    ['an unknown field', { domain: 'stats.SITE', cname: 'x' }, /unknown field "cname"/],
  ]
  for (const [name, body, message] of bad) {
    it(`rejects ${name} with 400 and changes nothing`, async () => {
      const site = await addSite()
      const input = JSON.parse(JSON.stringify(body).replaceAll('SITE', site.domain))
      const res = await t.call('POST', path(site.id), { key: t.a.write.key, body: input })
      expect(res.status).toBe(400)
      expect(res.json.error).toMatch(message)
      expect(await t.repositories.siteChecks.customDomain(site.id)).toBeNull()
      expect(await t.repositories.sites.get(site.id)).toEqual(site)
    })
  }

  it('needs a write key to change, and keeps organizations and site-bound keys apart', async () => {
    const domain = `stats.${t.a.site.domain}`
    expect((await t.call('POST', path(t.a.site.id), { key: t.a.read.key, body: { domain } })).status).toBe(403)
    expect((await t.call('DELETE', path(t.a.site.id), { key: t.a.read.key })).status).toBe(403)
    for (const ref of [t.b.site.id, t.b.site.snippetId]) {
      expect((await t.call('GET', path(ref), { key: t.a.read.key })).status).toBe(404)
      expect((await t.call('POST', path(ref), { key: t.a.write.key, body: { domain: `stats.${t.b.site.domain}` } })).status).toBe(404)
      expect((await t.call('DELETE', path(ref), { key: t.a.write.key })).status).toBe(404)
    }
    expect(await t.repositories.siteChecks.customDomain(t.b.site.id)).toBeNull()
    const other = await addSite()
    expect((await t.call('GET', path(other.id), { key: t.ingest.key })).status).toBe(404)
    expect((await t.call('POST', path(t.a.site.id), { key: t.ingest.key, body: { domain } })).json.customDomain).toBe(domain)
  })
})
