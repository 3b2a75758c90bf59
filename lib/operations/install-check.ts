import type { OperationServices } from './operation-services'
import { parseHTML } from 'linkedom'
import { z } from 'zod'
import { cspBlocksTracker, parsePolicies } from '../sites/content-security-policy'
import { siteActivity } from '../reports/query/site-events'
import { siteOrigin } from '../crawl/config'
import type { Site } from '../sites/sites'
import { type InstallCheck, type InstallResult, installCheckSchema } from '../sites/install-check-result'

/**
 * Whether a site's tracking is installed: the events it has sent, and the last look at its
 * homepage for our script tag (parsed with linkedom). The homepage is read where the crawler reads
 * the site's pages, with its guarded fetch: a local copy under CRAWL_ORIGIN, the demo site's
 * website on loopback; without a crawler, https://<domain>/ through the home's guarded fetch.
 */

export const installStateSchema = z.object({
  installed: z.boolean().describe('An event was ever received, or the last check found the tag'),
  recording: z.boolean().describe('Events were received in the last 24 hours'),
  firstEventAt: z.string().nullable(),
  lastEventAt: z.string().nullable(),
  eventsLast24h: z.number().int(),
  lastCheck: installCheckSchema.nullable(),
})

export async function installState(
  services: OperationServices,
  site: Site,
  lastCheck?: InstallCheck | null,
): Promise<z.infer<typeof installStateSchema>> {
  const since = new Date(services.now().getTime() - 24 * 3600_000)
  const [activity, check] = await Promise.all([
    siteActivity(services.clickhouse, site.id, since),
    lastCheck === undefined ? services.repositories.siteChecks.installCheck(site.id) : lastCheck,
  ])
  return {
    installed: activity.firstEventAt !== null || check?.result === 'found' || check?.result === 'blocked_by_csp' || site.install.installed,
    recording: activity.eventsSince > 0,
    firstEventAt: activity.firstEventAt,
    lastEventAt: activity.lastEventAt,
    eventsLast24h: activity.eventsSince,
    lastCheck: check,
  }
}

/** Fetches the homepage now, looks for the tag, records the result, and answers the install state. */
export async function checkInstallNow(services: OperationServices, site: Site) {
  const crawler = services.crawler
  const homepage = `${crawler ? siteOrigin(crawler, site) : `https://${site.domain}`}/`
  const check = await inspectHomepage(crawler?.fetch ?? services.fetch, homepage, site, services.now())
  await services.repositories.siteChecks.saveInstallCheck(site.id, check)
  // the site's own install state (shown with its settings) follows the check
  const seen = check.result === 'found' || check.result === 'blocked_by_csp'
  await services.sites.update(site.id, (fresh) => ({
    ...fresh,
    install: { ...fresh.install, installed: fresh.install.installed || seen, checkedAt: check.checkedAt },
  }))
  return installState(services, site, check)
}

async function inspectHomepage(fetcher: typeof fetch, url: string, site: Site, now: Date): Promise<InstallCheck> {
  const answer = (result: InstallResult, status: number | null, detail: string): InstallCheck => ({
    checkedAt: now.toISOString(),
    url,
    result,
    status,
    detail,
  })
  let response: Response
  try {
    response = await fetcher(url, {
      headers: { accept: 'text/html', 'user-agent': 'Mozilla/5.0 (compatible; web-analytics-install-check/1)' },
    })
  } catch (err) {
    return answer('unreachable', null, `the homepage did not answer: ${(err as Error).message}`)
  }
  if (!response.ok) return answer('unreachable', response.status, `the homepage answered ${response.status}`)
  const page = new URL(response.url || url)
  const { document } = parseHTML(await response.text())
  const tagged = [...document.querySelectorAll('script[data-site]')]
  const ours = tagged.find((s) => s.getAttribute('data-site') === site.snippetId)
  if (!ours) {
    const other = tagged.find((s) => /\/js\/script\.js(\?|$)/.test(s.getAttribute('src') ?? ''))
    if (other)
      return answer(
        'other_site',
        response.status,
        `the page has the tracking snippet of another site (data-site="${other.getAttribute('data-site')}"), not this site's ("${site.snippetId}")`,
      )
    return answer('script_missing', response.status, `no script tag with data-site="${site.snippetId}" on the homepage`)
  }
  let scriptUrl: URL
  try {
    scriptUrl = new URL(ours.getAttribute('src') ?? '', page)
  } catch {
    return answer('script_missing', response.status, `the script tag with data-site="${site.snippetId}" has no valid src`)
  }
  const metaPolicies = [...document.querySelectorAll('meta[http-equiv]')]
    .filter((m) => m.getAttribute('http-equiv')?.toLowerCase() === 'content-security-policy')
    .map((m) => m.getAttribute('content') ?? '')
  const headerPolicy = response.headers.get('content-security-policy')
  const policies = parsePolicies([...(headerPolicy ? [headerPolicy] : []), ...metaPolicies])
  const blocked = cspBlocksTracker(policies, page, { url: scriptUrl, nonce: ours.getAttribute('nonce') })
  if (blocked) return answer('blocked_by_csp', response.status, blocked)
  return answer('found', response.status, `found the tracking script of this site (${scriptUrl.href})`)
}
