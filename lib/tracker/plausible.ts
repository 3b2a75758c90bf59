// Plausible's script tag, served by this host: a page that kept its tag
//   <script defer data-domain="example.com" src="https://HOST/js/script.outbound-links.tagged-events.js"></script>
// is tracked with the same attributes and behaviours. The extensions come from the file's name
// (for script.js, which is our own tracker, from the tag's src that tracker passes on when it
// finds data-domain instead of data-site). Sends Plausible's payload to /api/event, which knows
// it. No cookies, no storage.

type Options = {
  props?: Record<string, unknown>
  revenue?: { amount: number | string; currency: string }
  interactive?: boolean
  callback?: (result?: { status: number } | { error: unknown }) => void
  u?: string
  url?: string
}
type Plausible = ((name: string, options?: Options) => void) & { q?: IArguments[] }

;((w: Window & { plausible?: Plausible }, d: Document, loc: Location) => {
  const tag = d.currentScript as HTMLScriptElement
  const attr = (name: string) => tag.getAttribute(name)
  const src = new URL(attr('data-plausible-src') || tag.src, loc.href)
  const extensions = src.pathname.split('/').pop()!.split('.').slice(1, -1)
  const has = (extension: string) => extensions.includes(extension)
  const domain = attr('data-domain')
  const endpoint = attr('data-api') || `${src.origin}/api/event`
  const hash = has('hash')
  // pageview-props: event-<name>="value" on the tag goes with every pageview
  const pageProps: Record<string, string> = {}
  if (has('pageview-props')) for (const a of tag.getAttributeNames()) if (a.startsWith('event-')) pageProps[a.slice(6)] = attr(a)!
  const local = /^localhost$|^127(\.\d+){0,2}\.\d+$|^\[::1?\]$/.test(loc.hostname) || loc.protocol === 'file:'
  const ignored = local && !has('local') && !tag.hasAttribute('data-allow-localhost')
  const now = Date.now

  const send = (name: string, options: Options = {}, extra?: Record<string, unknown>) => {
    if (ignored) {
      console.warn('Ignoring Event: localhost')
      return options.callback?.()
    }
    const body: Record<string, unknown> = {
      n: name,
      u: options.u || options.url || loc.href,
      d: domain,
      r: d.referrer || null,
      w: w.innerWidth,
    }
    if (options.props && Object.keys(options.props).length) body.p = options.props
    if (options.revenue) body.$ = options.revenue
    if (options.interactive === false) body.i = false
    if (hash) body.h = 1
    fetch(endpoint, { method: 'POST', body: JSON.stringify({ ...body, ...extra }), keepalive: true }).then(
      (response) => options.callback?.({ status: response.status }),
      (error) => options.callback?.({ error }),
    )
  }

  // engagement: the time the page was visible since the last report, and the deepest scroll so far
  let page = ''
  let visibleSince = 0
  let engaged = 0
  let depth = 0
  let reportedDepth = 0
  const scrolled = () => {
    const el = d.documentElement
    depth = Math.max(depth, Math.min(100, Math.round(((w.scrollY + w.innerHeight) / Math.max(el.scrollHeight, 1)) * 100)))
  }
  const tally = () => {
    if (visibleSince) engaged += now() - visibleSince
    visibleSince = d.visibilityState === 'visible' ? now() : 0
  }
  const report = () => {
    tally()
    if (!page || (engaged < 1000 && depth <= reportedDepth)) return
    send('engagement', { u: page, props: pageProps }, { sd: depth, e: engaged })
    engaged = 0
    reportedDepth = depth
  }
  const pageview = (options: Options = {}) => {
    report()
    page = options.u || options.url || loc.href
    engaged = depth = reportedDepth = 0
    tally()
    scrolled()
    send('pageview', { ...options, props: { ...pageProps, ...options.props } })
  }

  let lastPath = ''
  const navigated = () => {
    if (!hash && loc.pathname === lastPath) return
    lastPath = loc.pathname
    pageview()
  }

  // tagged events: classes plausible-event-name=Signup and plausible-event-<prop>=<value> (or -- for =), + for a space
  const tagged = (el: Element | null) => {
    for (; el && el !== d.documentElement; el = el.parentElement) {
      const props: Record<string, string> = {}
      const revenue: Record<string, string> = {}
      let name = ''
      for (const c of el.classList) {
        const m = c.match(/^plausible-(event|revenue)-(.+?)(=|--)(.+)$/)
        if (!m) continue
        const value = m[4].replace(/\+/g, ' ')
        if (m[1] === 'revenue') revenue[m[2]] = value
        else if (m[2] === 'name') name = value
        else props[m[2]] = value
      }
      if (name) {
        const options: Options = { props }
        if (has('revenue') && revenue.amount && revenue.currency) options.revenue = { amount: revenue.amount, currency: revenue.currency }
        return { el, name, options }
      }
    }
  }

  const FILE_TYPES = 'pdf,xlsx,docx,txt,rtf,csv,exe,key,pps,ppt,pptx,7z,pkg,rar,gz,zip,avi,mov,mp4,mpeg,wmv,midi,mp3,wav,wma,dmg'.split(',')
  const list = (name: string) =>
    attr(name)
      ?.split(',')
      .map((t) => t.trim()) || []
  const fileTypes = attr('file-types') ? list('file-types') : [...FILE_TYPES, ...list('add-file-types')]

  const clicked = (event: MouseEvent) => {
    if (event.type === 'auxclick' && event.button !== 1) return
    const target = event.target as Element
    // a tagged form counts its submissions, not the clicks inside it
    const event_ = has('tagged-events') && tagged(target)
    const link = target.closest?.('a[href]') as HTMLAnchorElement | null
    if (event_ && event_.el.tagName !== 'FORM') {
      if (link) event_.options.props!.url = link.href
      return send(event_.name, event_.options)
    }
    if (!link || !/^https?:$/.test(link.protocol)) return
    const url = link.href.split('?')[0]
    if (has('outbound-links') && link.host !== loc.host) send('Outbound Link: Click', { props: { url: link.href } })
    else if (has('file-downloads') && fileTypes.includes(url.split('.').pop()!.toLowerCase())) send('File Download', { props: { url } })
  }
  d.addEventListener('click', clicked)
  d.addEventListener('auxclick', clicked)
  if (has('tagged-events'))
    d.addEventListener('submit', (event) => {
      const event_ = tagged(event.target as Element)
      if (event_) send(event_.name, event_.options)
    })

  w.addEventListener('scroll', scrolled, { passive: true })
  d.addEventListener('visibilitychange', () => (d.visibilityState === 'hidden' ? report() : tally()))
  w.addEventListener('pagehide', report)

  const queued = w.plausible?.q || []
  w.plausible = (name: string, options?: Options) => (name === 'pageview' ? pageview(options) : send(name, options))
  if (!has('manual')) {
    const history = w.history
    const push = history.pushState
    history.pushState = function (...args) {
      push.apply(this, args)
      navigated()
    }
    w.addEventListener('popstate', navigated)
    if (hash) w.addEventListener('hashchange', navigated)
    navigated()
  }
  for (const args of queued) w.plausible(...(args as unknown as [string, Options]))
})(window, document, location)
