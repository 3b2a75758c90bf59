import { describe, expect, it } from 'vitest'
import { email, webHarness } from './web-harness'

/** The nonce the answer's policy allows scripts and styles with. */
function policyNonce(response: Response) {
  const policy = response.headers.get('content-security-policy') ?? ''
  const script = /script-src 'nonce-([^']+)'/.exec(policy)?.[1]
  const style = /style-src 'nonce-([^']+)'/.exec(policy)?.[1]
  expect(script, policy).toBeTruthy()
  expect(style).toBe(script)
  return script!
}

/** The nonce attribute of every inline script and stylesheet of a page. */
const nonceAttributes = (html: string) => [...html.matchAll(/<(script|style)\b([^>]*)>/g)].map((m) => / nonce="([^"]*)"/.exec(m[2])?.[1])

describe('the security headers of the web application and the shared dashboards', () => {
  it('allows only the inline scripts and styles of each answer, by a nonce of its own, and no framing', async () => {
    const t = await webHarness()
    const cookie = await t.signIn(email())
    const orgId = /([0-9a-f-]{36})$/.exec((await t.request('/app/orgs', { form: { name: 'Policy' }, cookie })).headers.get('location')!)![1]
    const siteId = /sites\/([0-9a-f-]{36})/.exec(
      (
        await t.request(`/app/orgs/${orgId}/sites`, { form: { domain: `policy-${crypto.randomUUID().slice(0, 6)}.example.com` }, cookie })
      ).headers.get('location')!,
    )![1]
    expect((await t.request(`/app/sites/${siteId}/share`, { form: { shareLevel: 'link', isPublic: 'on' }, cookie })).status).toBe(303)

    const pages = {
      signin: await t.request('/app/signin'),
      dashboard: await t.request(`/app/sites/${siteId}`, { cookie }),
      settings: await t.request(`/app/sites/${siteId}/settings`, { cookie }),
      keys: await t.request(`/app/orgs/${orgId}/keys`, { cookie }),
      shared: await t.request(`/share/${siteId}`),
      missing: await t.request(`/app/sites/${crypto.randomUUID()}`, { cookie }),
    }
    const seen = new Set<string>()
    for (const [name, response] of Object.entries(pages)) {
      const nonce = policyNonce(response)
      seen.add(nonce)
      const html = await response.text()
      const nonces = nonceAttributes(html)
      // the layout's stylesheet at least; the dashboard and settings pages have scripts too
      expect(nonces.length, name).toBeGreaterThanOrEqual(name === 'dashboard' || name === 'settings' ? 2 : 1)
      expect(nonces, name).toEqual(nonces.map(() => nonce))
      const policy = response.headers.get('content-security-policy')!
      expect(policy).toContain("default-src 'none'")
      expect(policy).toContain("frame-ancestors 'none'")
      expect(policy).toContain("form-action 'self'")
      expect(policy).not.toContain('unsafe-eval')
      expect(policy).not.toMatch(/script-src[^;]*unsafe-inline/)
    }
    // a nonce is never used twice
    expect(seen.size).toBe(Object.keys(pages).length)
    // HSTS where the configured origin is https (the harness's PUBLIC_URL, https://api.test)
    for (const response of Object.values(pages)) expect(response.headers.get('strict-transport-security')).toBe('max-age=31536000')
  })

  it('sends no Strict-Transport-Security where the configured origin is http, or where there is none', async () => {
    for (const publicUrl of ['http://127.0.0.1:8787', undefined]) {
      const t = await webHarness('embedded', { publicUrl })
      const signin = await t.request('/app/signin')
      expect(signin.status).toBe(200)
      policyNonce(signin)
      expect(signin.headers.get('strict-transport-security'), String(publicUrl)).toBeNull()
      const shared = await t.request(`/share/${crypto.randomUUID()}`)
      expect(shared.status).toBe(404)
      policyNonce(shared)
      expect(shared.headers.get('strict-transport-security')).toBeNull()
    }
  })
})
