import { ApiError } from '../errors'
import { randomString, secretsEqual, sha256Hex } from '../accounts/keys'
import type { SiteDirectory } from './site-directory'
import type { Site } from './sites'

/** The parameter of a shared link that carries its secret (the request log redacts it). */
export const SHARE_SECRET_PARAM = 'auth'

/** Where a site's read-only dashboard is shared: `/share/{site id}` (open when isPublic), `?auth=` for the secret link. */
export const sharePath = (site: Pick<Site, 'id'>) => `/share/${site.id}`

/**
 * Mints the site's secret link, or a new one in place of the old (which stops working at once).
 * Only its SHA-256 is stored: the link is in the answer only this time. A site whose shareLevel
 * is none shares nothing, so it gets no link (400 naming the setting).
 */
export async function rotateShareLink(services: { sites: SiteDirectory; now: () => Date }, site: Site, baseUrl: string) {
  if (site.sharing.shareLevel === 'none')
    throw new ApiError(400, 'shareLevel: the site shares nothing (none); set it to link or full first, then make the link')
  const secret = randomString(32)
  const createdAt = services.now().toISOString()
  const hash = await sha256Hex(secret)
  const rotated = Boolean(site.shareLink)
  await services.sites.update(site.id, (fresh) => ({ ...fresh, shareLink: { hash, createdAt } }))
  return { url: `${baseUrl}${sharePath(site)}?${SHARE_SECRET_PARAM}=${secret}`, createdAt, rotated }
}

/** The stored hash of the site's link a secret names, or null when it names none (wrong, revoked, or the site shares nothing). */
export async function shareLinkHash(site: Site, secret: string): Promise<string | null> {
  if (site.sharing.shareLevel === 'none' || !site.shareLink || !secret) return null
  const hash = await sha256Hex(secret)
  return secretsEqual(hash, site.shareLink.hash) ? site.shareLink.hash : null
}

/**
 * Whether a visitor who is not signed in may see the site's shared dashboard: anyone when the
 * site is public; else one who holds the current link (its hash, as the link's cookie keeps it).
 */
export function sharedDashboardOpen(site: Site, heldHash: string | null | undefined): boolean {
  if (site.sharing.isPublic) return true
  if (site.sharing.shareLevel === 'none' || !site.shareLink || !heldHash) return false
  return secretsEqual(heldHash, site.shareLink.hash)
}

/** Whether the shared view also opens the sections (realtime, errors, pages, ...): shareLevel full. */
export const sharesSections = (site: Site) => site.sharing.shareLevel === 'full'
