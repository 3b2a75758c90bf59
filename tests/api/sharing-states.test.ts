import { describe, expect, it } from 'vitest'
import { createApiKey } from '../../lib/accounts/admin'
import { ORIGIN, cookieOf, email, webHarness } from './web-harness'

/**
 * Sharing is one of three states, private, link and public: every move between them, through the
 * API and through the web application's forms, leaves the shared dashboard open to exactly whom the
 * state says. Private ends the secret link and every cookie it gave; sharing by link again takes a
 * new secret, and nothing of the old one opens the dashboard again.
 */

const unescapeHtml = (s: string) => s.replace(/&amp;/g, '&').replace(/&quot;/g, '"')
const shownLink = (html: string) => unescapeHtml(/<pre id="share-link" class="code">([^<]+)<\/pre>/.exec(html)?.[1].trim() ?? '')

async function sharingSite() {
  const t = await webHarness()
  const owner = email()
  const cookie = await t.signIn(owner)
  const orgId = /([0-9a-f-]{36})$/.exec((await t.request('/app/orgs', { form: { name: 'Sharing' }, cookie })).headers.get('location')!)![1]
  const siteId = /sites\/([0-9a-f-]{36})/.exec(
    (
      await t.request(`/app/orgs/${orgId}/sites`, { form: { domain: `share-${crypto.randomUUID().slice(0, 6)}.example.com` }, cookie })
    ).headers.get('location')!,
  )![1]
  const { key: writeKey } = await createApiKey(t.services.repositories, { orgId, name: 'write', scope: 'write' }, t.services.now())
  const api = async (method: string, path: string, body?: unknown) => {
    const answer = await t.request(path, {
      method,
      headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: answer.status, json: (await answer.json()) as any }
  }
  const patch = (body: unknown) => api('PATCH', `/api/v1/sites/${siteId}`, body)
  const sharing = async () => (await api('GET', `/api/v1/sites/${siteId}`)).json.sharing
  /** Makes a link through the API; its path and query, as a browser opens it. */
  const makeLink = async () => {
    const made = await api('POST', `/api/v1/sites/${siteId}/share-link`)
    expect(made.status, JSON.stringify(made.json)).toBe(201)
    const url = new URL(made.json.url)
    return { open: `${url.pathname}${url.search}`, rotated: made.json.rotated as boolean }
  }
  /** Opens a link signed out: the cookie it gives, or null when it opens nothing. */
  const cookieFrom = async (link: string) => {
    const opened = await t.request(link)
    if (opened.status === 404) return null
    expect(opened.status).toBe(303)
    return cookieOf(opened)
  }
  /** The status of the shared dashboard for a visitor holding `held` (a link's cookie), or nothing. */
  const seen = async (held?: string | null) => (await t.request(`/share/${siteId}`, held ? { cookie: held } : {})).status
  return { t, cookie, siteId, api, patch, sharing, makeLink, cookieFrom, seen }
}

describe('sharing states through the API', () => {
  it('moves private → link → private → link with a new secret each time; the old link and its cookie never open it again', async () => {
    const { siteId, api, patch, sharing, makeLink, cookieFrom, seen } = await sharingSite()
    expect(await sharing()).toMatchObject({ access: 'private', shareLevel: 'none', isPublic: false, linkCreatedAt: null })
    expect(await seen()).toBe(404)

    // private → link: nothing opens it until a link is made
    expect((await patch({ access: 'link' })).json.sharing).toMatchObject({ access: 'link', shareLevel: 'link', isPublic: false })
    expect(await seen()).toBe(404)
    const first = await makeLink()
    expect(first.rotated).toBe(false)
    const firstCookie = await cookieFrom(first.open)
    expect(firstCookie).toBeTruthy()
    expect(await seen(firstCookie)).toBe(200)
    expect((await sharing()).linkCreatedAt).not.toBeNull()

    // link → private: the link and its cookie stop at once, and no link can be made
    expect((await patch({ access: 'private' })).json.sharing).toMatchObject({
      access: 'private',
      shareLevel: 'none',
      isPublic: false,
      linkCreatedAt: null,
    })
    expect(await seen(firstCookie)).toBe(404)
    expect(await cookieFrom(first.open)).toBeNull()
    const refused = await api('POST', `/api/v1/sites/${siteId}/share-link`)
    expect(refused.status).toBe(400)
    expect(refused.json.error).toMatch(/^access: the site is private/)

    // private → link again: the old link and cookie stay dead; a new link is a new secret
    expect((await patch({ access: 'link' })).json.sharing).toMatchObject({ access: 'link', linkCreatedAt: null })
    expect(await seen(firstCookie)).toBe(404)
    expect(await cookieFrom(first.open)).toBeNull()
    const second = await makeLink()
    // the old link was ended with the private state: this one replaces nothing
    expect(second.rotated).toBe(false)
    expect(second.open).not.toBe(first.open)
    expect(await cookieFrom(first.open)).toBeNull()
    expect(await seen(firstCookie)).toBe(404)
    const secondCookie = await cookieFrom(second.open)
    expect(await seen(secondCookie)).toBe(200)
  })

  it('moves link → public → link → public → private → public, each open to whom it says', async () => {
    const { patch, makeLink, cookieFrom, seen } = await sharingSite()
    await patch({ access: 'link' })
    const link = await makeLink()
    const held = await cookieFrom(link.open)

    // link → public: anyone, and the link still works
    expect((await patch({ access: 'public' })).json.sharing).toMatchObject({ access: 'public', isPublic: true, shareLevel: 'link' })
    expect(await seen()).toBe(200)
    expect(await seen(held)).toBe(200)
    // public → link: the link's holders only
    expect((await patch({ access: 'link' })).json.sharing).toMatchObject({ access: 'link', isPublic: false })
    expect(await seen()).toBe(404)
    expect(await seen(held)).toBe(200)
    // public → private: nobody, the link's holders neither
    await patch({ access: 'public' })
    expect((await patch({ access: 'private' })).json.sharing).toMatchObject({ access: 'private', isPublic: false, shareLevel: 'none' })
    expect(await seen()).toBe(404)
    expect(await seen(held)).toBe(404)
    // private → public: anyone again, but the old link is gone for good
    expect((await patch({ access: 'public' })).json.sharing).toMatchObject({ access: 'public', linkCreatedAt: null })
    expect(await seen()).toBe(200)
    expect(await cookieFrom(link.open)).toBeNull()
    expect((await patch({ access: 'link' })).json.sharing.linkCreatedAt).toBeNull()
    expect(await seen(held)).toBe(404)
  })

  it('maps shareLevel and isPublic onto the states, and refuses a combination naming two of them', async () => {
    const { patch, sharing, makeLink, cookieFrom, seen } = await sharingSite()
    // the dashboard was published by isPublic beside shareLevel none: now refused, naming both, and nothing changes
    for (const [body, fields] of [
      [{ shareLevel: 'none', isPublic: true }, /^shareLevel, isPublic: /],
      [{ access: 'private', shareLevel: 'full' }, /^access, shareLevel: /],
      [{ access: 'public', isPublic: false }, /^access, isPublic: /],
      [{ access: 'link', shareLevel: 'none' }, /^access, shareLevel: /],
      [{ access: 'link', isPublic: true }, /^access, isPublic: /],
    ] as const) {
      const refused = await patch(body)
      expect(refused.status, JSON.stringify(body)).toBe(400)
      expect(Object.keys(refused.json)).toEqual(['error'])
      expect(refused.json.error).toMatch(fields)
    }
    expect(await sharing()).toMatchObject({ access: 'private', shareLevel: 'none', isPublic: false })
    expect(await seen()).toBe(404)

    // the older fields alone: shareLevel link or full opens a private site to its link, isPublic true publishes it,
    // isPublic false takes a public one back to its link, shareLevel none makes any private
    expect((await patch({ shareLevel: 'full' })).json.sharing).toMatchObject({ access: 'link', shareLevel: 'full', isPublic: false })
    const link = await makeLink()
    const held = await cookieFrom(link.open)
    expect((await patch({ isPublic: true })).json.sharing).toMatchObject({ access: 'public', shareLevel: 'full', isPublic: true })
    expect(await seen()).toBe(200)
    expect((await patch({ shareLevel: 'link' })).json.sharing).toMatchObject({ access: 'public', shareLevel: 'link' })
    expect((await patch({ isPublic: false })).json.sharing).toMatchObject({ access: 'link', shareLevel: 'link' })
    expect(await seen()).toBe(404)
    expect(await seen(held)).toBe(200)
    expect((await patch({ access: 'link', shareLevel: 'full' })).json.sharing).toMatchObject({ access: 'link', shareLevel: 'full' })
    await patch({ isPublic: true })
    expect((await patch({ shareLevel: 'none' })).json.sharing).toMatchObject({ access: 'private', shareLevel: 'none', isPublic: false })
    expect(await seen()).toBe(404)
    expect(await seen(held)).toBe(404)
    // isPublic true alone on a private site publishes its dashboard, without its sections
    expect((await patch({ isPublic: true })).json.sharing).toMatchObject({ access: 'public', shareLevel: 'link' })
    expect(await seen()).toBe(200)
    expect(await seen(held)).toBe(200)
  })

  it('reads a record saved with isPublic beside shareLevel none as private, and never revives its link', async () => {
    const { t, siteId, patch, sharing, makeLink, cookieFrom, seen } = await sharingSite()
    await patch({ access: 'link' })
    const link = await makeLink()
    const held = await cookieFrom(link.open)
    // as the service stored it before the states were one: shareLevel none with isPublic, and the link kept
    await t.services.sites.update(siteId, (site) => ({ ...site, sharing: { ...site.sharing, shareLevel: 'none', isPublic: true } }))
    expect(await sharing()).toMatchObject({ access: 'private', shareLevel: 'none', isPublic: false, linkCreatedAt: null })
    expect(await seen()).toBe(404)
    expect(await seen(held)).toBe(404)
    expect(await cookieFrom(link.open)).toBeNull()
    await patch({ access: 'link' })
    expect(await seen(held)).toBe(404)
    expect(await cookieFrom(link.open)).toBeNull()
  })
})

describe('sharing states through the web application', () => {
  it('the sharing page moves private → link → private → link → public → private, a new link each time it is shared by link again', async () => {
    const { t, cookie, siteId, sharing, cookieFrom, seen } = await sharingSite()
    const save = (form: Record<string, string>) => t.request(`/app/sites/${siteId}/share`, { form, cookie })

    // the page says what the sections expose before they are chosen
    const page = await (await t.request(`/app/sites/${siteId}/share`, { cookie })).text()
    const full =
      /<input type="radio" id="shows-full"[^>]*aria-describedby="shows-full-exposes"[^>]*\/?>[\s\S]*?<p[^>]*id="shows-full-exposes">([\s\S]*?)<\/p>/.exec(
        page,
      )
    expect(full, 'the sections choice and what it exposes').not.toBeNull()
    expect(full![1]).toMatch(/by visitor id/)
    expect(full![1]).toMatch(/activity tape/)
    expect(page).toMatch(/<input type="radio" id="access-private" name="access" value="private" checked=""/)

    // private → link: the first link, made at once and shown once
    const linked = await save({ access: 'link', shareLevel: 'link' })
    expect(linked.status).toBe(201)
    const first = new URL(shownLink(await linked.text()), ORIGIN)
    expect(first.pathname).toBe(`/share/${siteId}`)
    const firstCookie = await cookieFrom(`${first.pathname}${first.search}`)
    expect(await seen(firstCookie)).toBe(200)
    expect((await t.request(`/share/${siteId}/errors`, { cookie: firstCookie! })).status).toBe(404)

    // link → private, with the sections ticked: private shows nothing, and ends the link and its cookie
    expect((await save({ access: 'private', shareLevel: 'full' })).status).toBe(303)
    expect(await sharing()).toMatchObject({ access: 'private', shareLevel: 'none', linkCreatedAt: null })
    expect(await seen(firstCookie)).toBe(404)
    expect(await cookieFrom(`${first.pathname}${first.search}`)).toBeNull()
    const closed = await (await t.request(`/app/sites/${siteId}/share`, { cookie })).text()
    expect(closed).toContain('<dd data-fact="access">nobody: private</dd>')
    expect(closed).not.toContain('Make a link')

    // private → link with the sections: a new secret; the old one and its cookie stay dead
    const again = await save({ access: 'link', shareLevel: 'full' })
    expect(again.status).toBe(201)
    const second = new URL(shownLink(await again.text()), ORIGIN)
    expect(second.search).not.toBe(first.search)
    expect(await seen(firstCookie)).toBe(404)
    expect(await cookieFrom(`${first.pathname}${first.search}`)).toBeNull()
    const secondCookie = await cookieFrom(`${second.pathname}${second.search}`)
    expect(await seen(secondCookie)).toBe(200)
    expect((await t.request(`/share/${siteId}/errors`, { cookie: secondCookie! })).status).toBe(200)

    // link → public, the dashboard alone: anyone, without the sections
    expect((await save({ access: 'public', shareLevel: 'link' })).status).toBe(303)
    expect(await seen()).toBe(200)
    expect((await t.request(`/share/${siteId}/errors`)).status).toBe(404)
    // public → link keeps the link it has: no new one
    expect((await save({ access: 'link', shareLevel: 'link' })).status).toBe(303)
    expect(await seen()).toBe(404)
    expect(await seen(secondCookie)).toBe(200)
    // → public → private
    await save({ access: 'public', shareLevel: 'link' })
    expect((await save({ access: 'private' })).status).toBe(303)
    expect(await seen()).toBe(404)
    expect(await seen(secondCookie)).toBe(404)
  })

  it("the settings page's sharing form moves between the states, and the older form's fields still map onto them", async () => {
    const { t, cookie, siteId, sharing, makeLink, cookieFrom, seen } = await sharingSite()
    const group = (access: string) =>
      t.request(`/app/sites/${siteId}/settings/sharing`, { form: { access, publicCountsDial: 'live' }, cookie })
    expect((await group('link')).status).toBe(303)
    expect(await sharing()).toMatchObject({ access: 'link', shareLevel: 'link' })
    const link = await makeLink()
    const held = await cookieFrom(link.open)
    expect(await seen(held)).toBe(200)
    expect((await group('public')).status).toBe(303)
    expect(await seen()).toBe(200)
    expect((await group('private')).status).toBe(303)
    expect(await seen()).toBe(404)
    expect(await seen(held)).toBe(404)
    expect((await group('link')).status).toBe(303)
    expect(await sharing()).toMatchObject({ access: 'link', linkCreatedAt: null })
    expect(await seen(held)).toBe(404)
    expect(await cookieFrom(link.open)).toBeNull()
    const settings = await (await t.request(`/app/sites/${siteId}/settings`, { cookie })).text()
    expect(settings).toMatch(
      /id="sharing-access" name="access"[^>]*><option value="private">[^<]*<\/option><option value="link" selected="">/,
    )

    // a sharing page opened before the states were one posts shareLevel and the isPublic box
    const older = (form: Record<string, string>) => t.request(`/app/sites/${siteId}/share`, { form, cookie })
    const contradiction = await older({ shareLevel: 'none', isPublic: 'on' })
    expect(contradiction.status).toBe(400)
    expect(await contradiction.text()).toContain('shareLevel, isPublic: they name different sharing states')
    expect(await sharing()).toMatchObject({ access: 'link' })
    expect((await older({ shareLevel: 'link', isPublic: 'on' })).status).toBe(303)
    expect(await sharing()).toMatchObject({ access: 'public' })
    expect((await older({ shareLevel: 'none' })).status).toBe(303)
    expect(await sharing()).toMatchObject({ access: 'private' })
  })
})
