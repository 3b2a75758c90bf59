import type { DomainServices } from './domain-services'
import { z } from 'zod'
import { ApiError } from '../core/errors'
import { type Site, siteView } from './sites'

/**
 * A custom tracking domain: a subdomain of the site (stats.example.com) pointed by CNAME at this
 * service, so the script and its events are first-party. The snippet uses it only once DNS
 * points it here; until then, and whenever DNS points it elsewhere, the snippet keeps the
 * service's own host.
 */

export const CUSTOM_DOMAIN_STATUSES = ['none', 'pending', 'verified', 'wrong_target', 'error'] as const
type Status = (typeof CUSTOM_DOMAIN_STATUSES)[number]

export const customDomainStateSchema = z.object({
  customDomain: z.string().nullable().describe('The attached domain, verified or not'),
  cnameTarget: z
    .string()
    .nullable()
    .describe('Set a CNAME record of customDomain to this host; null while the service has no public hostname (set PUBLIC_URL)'),
  status: z
    .enum(CUSTOM_DOMAIN_STATUSES)
    .describe('none (no domain), pending (no record yet), verified, wrong_target (a CNAME to another host), error (DNS did not answer)'),
  detail: z.string(),
  addedAt: z.string().nullable(),
  verifiedAt: z.string().nullable(),
  trackingDomain: z.string().describe('The host the snippet loads the script from now'),
  snippet: z.string(),
})

/** 400 naming `field` unless `domain` is a subdomain of the site's domain. */
export function assertSubdomainOf(site: Site, domain: string, field = 'domain') {
  if (!domain.endsWith(`.${site.domain}`))
    throw new ApiError(400, `${field}: must be a subdomain of ${site.domain}, for example stats.${site.domain}`)
}

const normalize = (name: string) => name.toLowerCase().replace(/\.$/, '')

async function resolveStatus(services: DomainServices, domain: string, target: string): Promise<{ status: Status; detail: string }> {
  const dns = services.dns
  if (!dns?.cname) return { status: 'error', detail: 'this deployment has no DNS resolver to check the record' }
  try {
    const cnames = (await dns.cname(domain)).map(normalize)
    if (cnames.includes(target)) return { status: 'verified', detail: `${domain} is a CNAME of ${target}` }
    if (cnames.length) return { status: 'wrong_target', detail: `${domain} is a CNAME of ${cnames[0]}, not ${target}` }
    // a flattened CNAME (at some DNS hosts) answers the target's addresses directly
    const [mine, theirs] = await Promise.all([dns.lookup(domain), dns.lookup(target)])
    if (mine.length && mine.every((address) => theirs.includes(address)))
      return { status: 'verified', detail: `${domain} answers the addresses of ${target}` }
    return { status: 'pending', detail: `add a CNAME record: ${domain} -> ${target}` }
  } catch (err) {
    return { status: 'error', detail: `DNS did not answer for ${domain}: ${(err as Error).message}` }
  }
}

/** Whether a CNAME can point at the host: an address or a loopback name cannot be a CNAME target. */
const isPublicHostname = (host: string) =>
  !/^[\d.]+$/.test(host) &&
  !host.includes(':') &&
  !host.startsWith('[') &&
  host !== 'localhost' &&
  !host.endsWith('.localhost') &&
  host.includes('.')

const NEEDS_PUBLIC_URL =
  'this service has no public hostname to point a CNAME record at: set PUBLIC_URL to the address people reach it at (for example https://analytics.example.com)'

/** Sets the domain the snippet names (null: the service host) on the stored record. */
function setTrackingDomain(services: DomainServices, siteId: string, customDomain: string | null) {
  return services.sites.update(siteId, (fresh) =>
    fresh.tracking.customDomain === customDomain ? fresh : { ...fresh, tracking: { ...fresh.tracking, customDomain } },
  )
}

/** Checks DNS now; the snippet follows the answer (a DNS failure changes nothing). Answers the state. */
export async function customDomainState(services: DomainServices, site: Site, baseUrl: string) {
  const target = new URL(baseUrl).hostname
  // without PUBLIC_URL the host is the one the request named, often 127.0.0.1: never a CNAME target
  const cnameTarget = isPublicHostname(target) ? target : null
  const record = await services.repositories.siteChecks.customDomain(site.id)
  let current = site
  let check: { status: Status; detail: string } = {
    status: 'none',
    detail: cnameTarget ? 'no custom domain; the snippet uses the service host' : `no custom domain; ${NEEDS_PUBLIC_URL}`,
  }
  if (record) {
    check = cnameTarget ? await resolveStatus(services, record.domain, cnameTarget) : { status: 'pending', detail: NEEDS_PUBLIC_URL }
    const inSnippet = check.status === 'verified' ? record.domain : check.status === 'error' ? site.tracking.customDomain : null
    if (check.status === 'verified' && !record.verifiedAt) {
      record.verifiedAt = services.now().toISOString()
      await services.repositories.siteChecks.saveCustomDomain(site.id, record)
    }
    if (inSnippet !== site.tracking.customDomain) {
      current = await setTrackingDomain(services, site.id, inSnippet)
    }
  }
  const view = siteView(current, baseUrl)
  return {
    customDomain: record?.domain ?? null,
    cnameTarget,
    status: check.status,
    detail: check.detail,
    addedAt: record?.addedAt ?? null,
    verifiedAt: record?.verifiedAt ?? null,
    trackingDomain: current.tracking.customDomain ?? target,
    snippet: view.snippet,
    site: current,
  }
}

/** Attaches (or replaces) the site's custom domain; the snippet keeps the service host until DNS points the new one here. */
export async function attachCustomDomain(services: DomainServices, site: Site, domain: string, baseUrl: string) {
  assertSubdomainOf(site, domain)
  const existing = await services.repositories.siteChecks.customDomain(site.id)
  if (existing?.domain !== domain)
    await services.repositories.siteChecks.saveCustomDomain(site.id, { domain, addedAt: services.now().toISOString(), verifiedAt: null })
  let current = site
  if (site.tracking.customDomain && site.tracking.customDomain !== domain) {
    current = await setTrackingDomain(services, site.id, null)
  }
  return customDomainState(services, current, baseUrl)
}

/** Detaches the custom domain: the snippet goes back to the service host. */
export async function detachCustomDomain(services: DomainServices, site: Site, baseUrl: string) {
  await services.repositories.siteChecks.deleteCustomDomain(site.id)
  let current = site
  if (site.tracking.customDomain) {
    current = await setTrackingDomain(services, site.id, null)
  }
  return customDomainState(services, current, baseUrl)
}
