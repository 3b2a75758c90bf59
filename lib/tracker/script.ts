// The tracking script. It sets no cookies and uses no storage. Built with esbuild into
// bundle.generated.ts (npm run build:tracker); the server serves it at /js/script.js.
declare const VITALS_PATH: string
declare const VITALS_ATTRIBUTION_PATH: string
declare const ATTRIBUTION_SAMPLE: number
declare const PLAUSIBLE_PATH: string

type Opts = { callback?: () => void; [field: string]: unknown }
type Svc = ((name: string, opts?: Opts) => void) & { q?: IArguments[] }

;((w: Window & { svc?: Svc }, d: Document, loc: Location) => {
  const script = d.currentScript as HTMLScriptElement
  const site = script.getAttribute('data-site')
  const origin = new URL(script.src).origin
  // Plausible's tag (data-domain) kept with this host: its compatible build takes over, with the tag's attributes
  if (!site && script.hasAttribute('data-domain')) {
    const s = d.createElement('script')
    for (const a of script.getAttributeNames()) s.setAttribute(a, script.getAttribute(a)!)
    s.setAttribute('data-plausible-src', script.src)
    s.src = origin + PLAUSIBLE_PATH
    return void d.head.appendChild(s)
  }
  const endpoint = script.getAttribute('data-api') || `${origin}/api/event`
  const now = Date.now
  let lastPage = ''
  let visibleSince = 0
  let engaged = 0
  let scroll = 0
  let reported = 0

  // a page on the developer's own machine (or opened from a file) is not a visit, unless the tag opts in
  const local = /^(localhost|127\.0\.0\.1|\[::1\])$/.test(loc.hostname) || loc.protocol === 'file:'
  const muted = local && !script.hasAttribute('data-allow-localhost')
  if (muted) console.info('analytics: nothing is sent from this local page; add data-allow-localhost to the script tag to test')

  const send = (name: string, data?: Opts, callback?: () => void) => {
    if (muted) return void callback?.()
    const body = JSON.stringify({ site, name, url: loc.href, referrer: d.referrer || null, screenWidth: w.innerWidth, ...data })
    // a string beacon is text/plain: no preflight, and it outlives the page
    if (navigator.sendBeacon?.(endpoint, body)) callback?.()
    else fetch(endpoint, { method: 'POST', body, keepalive: true }).then(callback, callback)
  }

  const depth = () => {
    const el = d.documentElement
    const seen = Math.round(((w.scrollY + w.innerHeight) / Math.max(el.scrollHeight, 1)) * 100)
    scroll = Math.max(scroll, Math.min(seen, 100))
  }

  // engaged time counts only while the page is visible
  const tally = () => {
    if (visibleSince) engaged += now() - visibleSince
    visibleSince = d.visibilityState === 'visible' ? now() : 0
  }

  const leave = () => {
    tally()
    if (!lastPage || reported) return
    reported = 1
    send('engagement', { url: lastPage, engagement: { ms: engaged, scroll } })
  }

  const page = () => {
    if (loc.href === lastPage) return
    leave()
    lastPage = loc.href
    engaged = scroll = reported = 0
    tally()
    depth()
    send('pageview')
  }

  const selector = (el: Element) => {
    const parts: string[] = []
    for (let e: Element | null = el; e && e !== d.body && parts.length < 3; e = e.parentElement) {
      parts.unshift(
        e.tagName.toLowerCase() +
          (e.id
            ? `#${e.id}`
            : [...e.classList]
                .slice(0, 2)
                .map((c) => `.${c}`)
                .join('')),
      )
      if (e.id) break
    }
    return parts.join('>')
  }

  const INTERACTIVE = 'a,button,input,select,textarea,label,summary,[role=button],[role=link],[onclick],[tabindex]'
  // The only text a click carries is the label of a button or link: never a form field's value, nor
  // text inside a contenteditable region or anything the page marks private (data-private).
  const LABELLED = 'a,button,[role=button],[role=link]'
  const label = (el: Element) =>
    el.matches(LABELLED) &&
    !el.closest('[data-private],[contenteditable]:not([contenteditable=false])') &&
    !(el as HTMLElement).isContentEditable
      ? ((el as HTMLElement).innerText || '').trim().slice(0, 100)
      : ''
  // a rage click: the third on one spot (30 px) within a second of the first; [time, x, y, clicks]
  let burst = [0, 0, 0, 0]
  d.addEventListener(
    'click',
    (event) => {
      const target = event.target as Element
      const el = target.closest?.(INTERACTIVE) || target
      if (!el.tagName) return
      const href = el.closest('a')?.href
      const click: Record<string, unknown> = {
        selector: selector(el),
        text: label(el),
        tag: el.tagName.toLowerCase(),
        href,
        interactive: el.matches(INTERACTIVE),
      }
      // where a pointer click landed on the document (a key press that clicks has no position)
      const { pageX: x, pageY: y, detail } = event as MouseEvent
      if (detail) {
        const { scrollWidth: docWidth, scrollHeight: docHeight } = d.documentElement
        const [t, x0, y0, n] = burst
        burst = now() - t > 1000 || Math.abs(x - x0) > 30 || Math.abs(y - y0) > 30 ? [now(), x, y, 1] : [t, x0, y0, n + 1]
        Object.assign(click, {
          x: Math.min(1, +(x / docWidth).toFixed(4)),
          y: Math.min(1, +(y / docHeight).toFixed(4)),
          docWidth,
          docHeight,
        })
        if (burst[3] === 3) click.rage = true
      }
      if (href || /^(INPUT|SELECT|TEXTAREA)$/.test(el.tagName)) return send('click', { click })
      // a dead click: no navigation and no change to the page within a second
      let changed = 0
      const observer = new MutationObserver(() => (changed = 1))
      observer.observe(d.documentElement, { subtree: true, childList: true, attributes: true, characterData: true })
      const at = loc.href
      setTimeout(() => {
        observer.disconnect()
        click.dead = !changed && at === loc.href
        send('click', { click })
      }, 1000)
    },
    true,
  )

  d.addEventListener(
    'submit',
    (event) => {
      const form = event.target as HTMLFormElement
      send('form', { form: { selector: selector(form), action: form.action } })
    },
    true,
  )

  const error = (name: string, message: unknown, stack?: string, source?: string, line?: number) =>
    send('error', { error: { name: name || 'Error', message: String(message).slice(0, 1000), stack: stack?.slice(0, 4000), source, line } })
  w.addEventListener('error', (e) => e.message && error(e.error?.name, e.message, e.error?.stack, e.filename, e.lineno))
  w.addEventListener('unhandledrejection', (e) =>
    error(e.reason?.name || 'UnhandledRejection', e.reason?.message ?? e.reason, e.reason?.stack),
  )

  w.addEventListener('scroll', depth, { passive: true })
  d.addEventListener('visibilitychange', () => {
    if (d.visibilityState === 'hidden') leave()
    else {
      tally()
      reported = 0
    }
  })
  w.addEventListener('pagehide', leave)

  const history = w.history
  const push = history.pushState
  history.pushState = function (...args) {
    push.apply(this, args)
    page()
  }
  w.addEventListener('popstate', page)
  w.addEventListener('hashchange', () => loc.hash.startsWith('#/') && page())

  const queued = w.svc?.q || []
  w.svc = (name: string, opts?: Opts) => send(name, opts, opts?.callback)
  page()
  for (const args of queued) w.svc(...(args as unknown as [string, Opts]))

  w.addEventListener('load', () =>
    setTimeout(() => {
      const s = d.createElement('script')
      s.src = origin + (Math.random() < ATTRIBUTION_SAMPLE ? VITALS_ATTRIBUTION_PATH : VITALS_PATH)
      d.head.appendChild(s)
    }),
  )
})(window, document, location)
