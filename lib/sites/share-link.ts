import { ApiError } from '../core/errors'
import { randomString, secretsEqual, sha256Hex } from '../core/crypto'
import type { SiteDirectory } from './site-directory'
import { type Site, shareAccess } from './sites'

/** The parameter of a shared link that carries its secret (the request log redacts it). */
export const SHARE_SECRET_PARAM = 'auth'

/** Where a site's read-only dashboard is shared: `/share/{site id}` (open when isPublic), `?auth=` for the secret link. */
export const sharePath = (site: Pick<Site, 'id'>) => `/share/${site.id}`

const privateSite = () =>
  new ApiError(
    400,
    'access: the site is private (shareLevel none) and shares nothing; set access to link or public first, then make the link',
  )

/**
 * Mints the site's secret link, or a new one in place of the old (which stops working at once).
 * Only its SHA-256 is stored: the link is in the answer only this time. A private site shares
 * nothing, so it gets no link (400 naming the setting), also when it turned private meanwhile.
 */
export async function rotateShareLink(services: { sites: SiteDirectory; now: () => Date }, site: Site, baseUrl: string) {
  if (shareAccess(site.sharing) === 'private') throw privateSite()
  const secret = randomString(32)
  const createdAt = services.now().toISOString()
  const hash = await sha256Hex(secret)
  const rotated = Boolean(site.shareLink)
  await services.sites.update(site.id, (fresh) => {
    if (shareAccess(fresh.sharing) === 'private') throw privateSite()
    return { ...fresh, shareLink: { hash, createdAt } }
  })
  return { url: `${baseUrl}${sharePath(site)}?${SHARE_SECRET_PARAM}=${secret}`, createdAt, rotated }
}

/** The stored hash of the site's link a secret names, or null when it names none (wrong, replaced, or the site is private). */
export async function shareLinkHash(site: Site, secret: string): Promise<string | null> {
  if (shareAccess(site.sharing) === 'private' || !site.shareLink || !secret) return null
  const hash = await sha256Hex(secret)
  return secretsEqual(hash, site.shareLink.hash) ? site.shareLink.hash : null
}

/**
 * Whether a visitor who is not signed in may see the site's shared dashboard: anyone when the
 * site is public; one who holds the current link (its hash, as the link's cookie keeps it) when
 * it is shared by link; nobody when it is private.
 */
export function sharedDashboardOpen(site: Site, heldHash: string | null | undefined): boolean {
  const access = shareAccess(site.sharing)
  if (access !== 'link') return access === 'public'
  if (!site.shareLink || !heldHash) return false
  return secretsEqual(heldHash, site.shareLink.hash)
}

/** Whether the shared view also opens the sections (realtime, errors, pages, ...): shareLevel full. */
export const sharesSections = (site: Site) => site.sharing.shareLevel === 'full'
