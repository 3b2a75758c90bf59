/**
 * Just enough of Content-Security-Policy to tell whether a page's policy would stop our tracking
 * script from loading or from sending its events: the script and connect directives with their
 * fallbacks, host, scheme, 'self', '*', nonce and 'strict-dynamic' sources. Every policy a page
 * carries (headers and <meta> tags) must allow a load for it to happen.
 */

type Directives = Map<string, string[]>

/** Policies of a header value: several headers arrive joined by commas. */
export function parsePolicies(values: string[]): Directives[] {
  return values
    .flatMap((value) => value.split(','))
    .map((policy) => {
      const directives: Directives = new Map()
      for (const part of policy.split(';')) {
        const [name, ...sources] = part.trim().split(/\s+/)
        // the first of a repeated directive counts
        if (name && !directives.has(name.toLowerCase())) directives.set(name.toLowerCase(), sources)
      }
      return directives
    })
}

const defaultPort = (protocol: string) => (protocol === 'https:' ? '443' : protocol === 'http:' ? '80' : '')

function hostSourceMatches(source: string, url: URL, page: URL): boolean {
  const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?(\*\.)?([^/:]+|\*)(?::(\d+|\*))?(\/.*)?$/i.exec(source)
  if (!m) return false
  const [, scheme, wildcard, host, port, path] = m
  const protocol = url.protocol
  // a source without a scheme takes the page's; http sources also allow https
  const allowedScheme = scheme ? `${scheme.toLowerCase()}:` : page.protocol
  if (protocol !== allowedScheme && !(allowedScheme === 'http:' && protocol === 'https:')) return false
  const hostname = url.hostname.toLowerCase()
  if (host === '*') {
    if (!wildcard && !scheme && !port) return true
  } else if (wildcard) {
    if (!hostname.endsWith(`.${host.toLowerCase()}`)) return false
  } else if (hostname !== host.toLowerCase()) return false
  const urlPort = url.port || defaultPort(protocol)
  if (
    port !== '*' &&
    urlPort !== (port ?? defaultPort(allowedScheme)) &&
    !(port === undefined && allowedScheme === 'http:' && urlPort === '443')
  )
    return false
  if (path) return path.endsWith('/') ? url.pathname.startsWith(path) : url.pathname === path
  return true
}

function allows(sources: string[], url: URL, page: URL, nonce: string | null): boolean {
  const lower = sources.map((s) => s.toLowerCase())
  const nonceAllowed = nonce !== null && sources.includes(`'nonce-${nonce}'`)
  // with 'strict-dynamic', host and scheme sources are ignored: only a nonce can admit a parser-inserted script
  if (lower.includes("'strict-dynamic'")) return nonceAllowed
  if (nonceAllowed) return true
  return sources.some((source, i) => {
    const s = lower[i]
    if (s === '*') return url.protocol === 'http:' || url.protocol === 'https:'
    if (s === "'self'")
      return url.origin === page.origin || (page.protocol === 'http:' && url.protocol === 'https:' && url.host === page.host)
    if (/^[a-z][a-z0-9+.-]*:$/.test(s)) return url.protocol === s || (s === 'http:' && url.protocol === 'https:')
    if (s.startsWith("'")) return false
    return hostSourceMatches(source, url, page)
  })
}

/**
 * Why the policies stop the script at `script.url` (or its events, sent to the same origin), or
 * null when they let both through.
 */
export function cspBlocksTracker(policies: Directives[], page: URL, script: { url: URL; nonce: string | null }): string | null {
  const endpoint = new URL('/api/event', script.url)
  for (const directives of policies) {
    const scriptSources = directives.get('script-src-elem') ?? directives.get('script-src') ?? directives.get('default-src')
    if (scriptSources && !allows(scriptSources, script.url, page, script.nonce)) {
      return `the page's Content-Security-Policy script-src does not allow ${script.url.origin}`
    }
    const connectSources = directives.get('connect-src') ?? directives.get('default-src')
    if (connectSources && !allows(connectSources, endpoint, page, null)) {
      return `the page's Content-Security-Policy connect-src does not allow sending events to ${endpoint.origin}`
    }
  }
  return null
}
