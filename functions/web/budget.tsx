import type { Context, MiddlewareHandler } from 'hono'
import type { LimitClass, LimitResult } from '../../lib/accounts/ratelimit'
import { clientNetwork } from '../../lib/accounts/signin'
import type { Services } from '../../lib/runtime/services'
import { UUID_PATTERN } from '../../lib/sites/sites'
import { ErrorPage } from './layout'

const WHAT: Record<Extract<LimitClass, 'webClient' | 'sharedSite'>, string> = {
  webClient: 'too many requests from this network address',
  sharedSite: 'too many requests to this shared dashboard from everyone together',
}

/**
 * The budgets of the web application's and the shared dashboards' requests, as the API has one
 * per key: each request counts against its client address (an IPv6 client's /64), and with
 * `siteOf` a shared dashboard's also against its site, so that neither one client nor a crowd of
 * them runs a site's reads without end. The site's is counted only once the client's admits the
 * request: a client past its own budget spends nothing of the others'. Past a budget, 429 with
 * Retry-After: an error page for a page the browser opens, the API's JSON error for a script's
 * fetch (a panel, the live figure), which the page's script leaves as it was.
 */
export function webBudget(
  services: Pick<Services, 'limiter' | 'clientAddress'>,
  siteOf?: (c: Context) => string | undefined,
): MiddlewareHandler {
  return async (c, next) => {
    const client = await services.limiter.limit('webClient', clientNetwork(services.clientAddress(c.req.raw, c.env)))
    if (!client.success) return refuse(c, 'webClient', client)
    // an id that names no site opens nothing: it gets no budget of its own
    const site = siteOf?.(c)
    if (site && UUID_PATTERN.test(site)) {
      const shared = await services.limiter.limit('sharedSite', site.toLowerCase())
      if (!shared.success) return refuse(c, 'sharedSite', shared)
    }
    await next()
  }
}

function refuse(c: Context, budget: keyof typeof WHAT, result: LimitResult) {
  // when a request will be admitted again, rounded up: a client that waits this long is served
  const seconds = Math.max(1, Math.ceil((result.retryAfterMs ?? result.reset - Date.now()) / 1000))
  const message = `${WHAT[budget]}: ${result.limit} a minute; try again in ${seconds} seconds`
  c.header('Retry-After', String(seconds))
  c.header('Cache-Control', 'no-store')
  if ((c.req.header('accept') ?? '').includes('text/html')) return c.html(<ErrorPage status={429} message={message} />, 429)
  return c.json({ error: message }, 429)
}
