import { beforeAll, describe, expect, it } from 'vitest'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { harness, type Harness } from '../helpers'

describe('alert settings', () => {
  let t: Harness

  beforeAll(async () => {
    // the production rules: no private or loopback webhook targets
    t = await harness({ with: { fetch: guardedFetch() } })
  })

  const path = () => `/api/v1/sites/${t.a.site.id}/alerts`

  it('reads the defaults with a read key, by UUID or snippet id', async () => {
    const byId = await t.call('GET', path(), { key: t.a.read.key })
    expect(byId.status).toBe(200)
    expect(byId.json).toEqual({
      weeklyReport: false,
      monthlyReport: false,
      spikeAlerts: false,
      dropAlerts: false,
      spikeThreshold: 2,
      dropThreshold: 0.5,
      backlinkAlerts: false,
      vitalsAlerts: false,
      recipients: [],
      webhookUrl: null,
      source: null,
    })
    expect((await t.call('GET', `/api/v1/sites/${t.a.site.snippetId}/alerts`, { key: t.a.read.key })).json).toEqual(byId.json)
  })

  it('merges a patch, and shows a new webhook secret once', async () => {
    const first = await t.call('PATCH', path(), {
      key: t.a.write.key,
      body: { weeklyReport: true, recipients: ['Ann@Example.com', 'ann@example.com', 'bo@example.org'] },
    })
    expect(first.status).toBe(200)
    expect(first.json).toMatchObject({ weeklyReport: true, monthlyReport: false, recipients: ['ann@example.com', 'bo@example.org'] })
    expect(first.json).not.toHaveProperty('webhookSecret')
    const hook = await t.call('PATCH', path(), {
      key: t.a.write.key,
      body: { webhookUrl: 'https://hooks.example.com/analytics', spikeAlerts: true, spikeThreshold: 3 },
    })
    expect(hook.json).toMatchObject({
      weeklyReport: true,
      spikeAlerts: true,
      spikeThreshold: 3,
      webhookUrl: 'https://hooks.example.com/analytics',
    })
    expect(hook.json.webhookSecret).toMatch(/^whsec_\w{40}$/)
    // never again in reads: not here, not in the site
    const read = await t.call('GET', path(), { key: t.a.read.key })
    expect(JSON.stringify(read.json)).not.toContain(hook.json.webhookSecret)
    const siteRead = await t.call('GET', `/api/v1/sites/${t.a.site.id}`, { key: t.a.read.key })
    expect(siteRead.json.alerts).toEqual(read.json)
    expect(JSON.stringify(siteRead.json)).not.toContain(hook.json.webhookSecret)
    // the same URL again keeps the secret; rotating issues another
    expect(
      (await t.call('PATCH', path(), { key: t.a.write.key, body: { webhookUrl: 'https://hooks.example.com/analytics' } })).json,
    ).not.toHaveProperty('webhookSecret')
    const rotated = await t.call('PATCH', path(), { key: t.a.write.key, body: { rotateWebhookSecret: true } })
    expect(rotated.json.webhookSecret).toMatch(/^whsec_/)
    expect(rotated.json.webhookSecret).not.toBe(hook.json.webhookSecret)
    expect((await t.repositories.sites.get(t.a.site.id))!.webhookSecret).toBe(rotated.json.webhookSecret)
    // removing the webhook drops the secret
    expect((await t.call('PATCH', path(), { key: t.a.write.key, body: { webhookUrl: null } })).json.webhookUrl).toBeNull()
    expect((await t.repositories.sites.get(t.a.site.id))!.webhookSecret).toBeUndefined()
    expect((await t.call('PATCH', path(), { key: t.a.write.key, body: { rotateWebhookSecret: true } })).status).toBe(400)
  })

  const bad: [string, unknown, RegExp][] = [
    ['empty body', {}, /at least one field/],
    ['unknown field', { weeklyReports: true }, /unknown field "weeklyReports"/],
    ['wrong type', { weeklyReport: 'yes' }, /weeklyReport/],
    ['invalid recipient', { recipients: ['not-an-address'] }, /recipients\.0/],
    ['too many recipients', { recipients: Array.from({ length: 21 }, (_, i) => `r${i}@example.com`) }, /recipients: at most 20/],
    ['http webhook', { webhookUrl: 'http://hooks.example.com/x' }, /webhookUrl: must be an https URL/],
    ['loopback webhook', { webhookUrl: 'https://127.0.0.1/x' }, /webhookUrl: 127\.0\.0\.1 is a private/],
    ['private webhook', { webhookUrl: 'https://[::ffff:10.0.0.1]/x' }, /webhookUrl: .*private/],
    ['IPv4-compatible loopback webhook', { webhookUrl: 'https://[::7f00:1]/x' }, /webhookUrl: .*private/],
    ['IPv4-compatible dotted webhook', { webhookUrl: 'https://[::127.0.0.1]/x' }, /webhookUrl: .*private/],
    ['localhost webhook', { webhookUrl: 'https://localhost/x' }, /webhookUrl: localhost is a private/],
    ['spike threshold too low', { spikeThreshold: 1 }, /spikeThreshold/],
    ['drop threshold too high', { dropThreshold: 1 }, /dropThreshold/],
    ['source the site lacks', { source: 'ga4' }, /source: "ga4" is not one of the site's sources/],
    ['unknown source', { source: 'matomo' }, /source/],
    ['rotate false', { rotateWebhookSecret: false }, /rotateWebhookSecret/],
  ]
  for (const [name, body, message] of bad) {
    it(`rejects ${name} with 400 and changes nothing`, async () => {
      const before = await t.repositories.sites.get(t.a.site.id)
      // a valid field alongside the bad one is not applied either
      const res = await t.call('PATCH', path(), {
        key: t.a.write.key,
        body: name === 'empty body' ? body : { monthlyReport: true, ...(body as object) },
      })
      expect(res.status).toBe(400)
      expect(res.json.error).toMatch(message)
      expect(await t.repositories.sites.get(t.a.site.id)).toEqual(before)
    })
  }

  it('needs a write key to change, and keeps sites and organizations apart', async () => {
    expect((await t.call('PATCH', path(), { key: t.a.read.key, body: { weeklyReport: true } })).status).toBe(403)
    expect((await t.call('GET', path())).status).toBe(401)
    // another organization's site is not found, by UUID or snippet id
    for (const ref of [t.b.site.id, t.b.site.snippetId]) {
      expect((await t.call('GET', `/api/v1/sites/${ref}/alerts`, { key: t.a.read.key })).status).toBe(404)
      expect((await t.call('PATCH', `/api/v1/sites/${ref}/alerts`, { key: t.a.write.key, body: { weeklyReport: true } })).status).toBe(404)
    }
    expect((await t.repositories.sites.get(t.b.site.id))!.alerts.weeklyReport).toBe(false)
    // a site-bound key reaches its own site only
    expect((await t.call('PATCH', path(), { key: t.ingest.key, body: { monthlyReport: true } })).status).toBe(200)
    const other = await t.call('POST', '/api/v1/sites', {
      key: t.a.write.key,
      body: { domain: `other-${crypto.randomUUID().slice(0, 6)}.example.com` },
    })
    expect((await t.call('GET', `/api/v1/sites/${other.json.id}/alerts`, { key: t.ingest.key })).status).toBe(404)
  })
})
