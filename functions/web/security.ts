import type { MiddlewareHandler } from 'hono'
import type { Services } from '../../lib/runtime/services'

const randomNonce = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(18))))

/**
 * What the pages' markup carries where the answer's nonce goes, put in by `securityHeaders` as
 * the answer leaves. The markup is rendered by components far from the request, and Workers have
 * no per-request storage without Node's modules, so the nonce is written in afterwards. Random
 * per process and never sent (every page is rewritten), so no text shown on a page can spell it.
 * Made on first use: Workers make no random values outside a request.
 */
let nonceSlot: string | undefined

/** The `nonce` attribute of an inline script or stylesheet: the one the answer's policy allows. */
export const pageNonce = () => (nonceSlot ??= randomNonce())

/** HSTS for a year, on this host only: other hosts of the domain may not serve https. */
const HSTS = 'max-age=31536000'

/**
 * Every page's Content-Security-Policy: scripts and the stylesheet only with this answer's nonce
 * (the server writes every one of them; an injected one runs nowhere), style attributes (the bars'
 * widths, the markers' colours), fetches and forms to this origin only, no framing, no plugins.
 * A form may also lead to Google's consent page (connecting a site to Google answers a redirect there).
 */
function policy(nonce: string, services: Pick<Services, 'google'>) {
  const google = services.google ? ` ${new URL(services.google.authUrl).origin}` : ''
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "style-src-attr 'unsafe-inline'",
    "img-src 'self'",
    "connect-src 'self'",
    `form-action 'self'${google}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ')
}

/**
 * The security headers of the web application and the shared dashboards: the policy with a fresh
 * nonce per answer, and Strict-Transport-Security where the configured origin is https (over http
 * a browser ignores it, and a local server must stay reachable over http).
 */
export function securityHeaders(services: Pick<Services, 'google' | 'publicUrl'>): MiddlewareHandler {
  return async (c, next) => {
    await next()
    const nonce = randomNonce()
    if (c.res.headers.get('content-type')?.startsWith('text/html')) {
      const html = await c.res.text()
      c.res = new Response(html.replaceAll(pageNonce(), nonce), c.res)
    }
    c.header('Content-Security-Policy', policy(nonce, services))
    if (services.publicUrl?.startsWith('https:')) c.header('Strict-Transport-Security', HSTS)
  }
}
