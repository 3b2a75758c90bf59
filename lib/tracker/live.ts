// The badge script: fills elements carrying data-svc-live with the site's public visitor count.
// No cookies, no storage; polls only while the page is visible; one request per distinct question.
;((d: Document) => {
  const script = d.currentScript as HTMLScriptElement
  const host = (script.getAttribute('data-host') || new URL(script.src).origin).replace(/\/$/, '')
  const seconds = Math.min(300, Math.max(5, Number(script.getAttribute('data-interval')) || 15))
  let timer: ReturnType<typeof setTimeout> | undefined

  const refresh = () => {
    const groups = new Map<string, HTMLElement[]>()
    d.querySelectorAll<HTMLElement>('[data-svc-live]').forEach((el) => {
      const a = (name: string) => el.getAttribute(`data-svc-${name}`)
      const range = a('range')
      const query = new URLSearchParams({ site: a('live') || '' })
      if (range) {
        query.set('range', range)
        if (range === 'custom') query.set('from', a('from') || ''), query.set('to', a('to') || '')
      } else if (a('window') === '30m') query.set('range', '30m')
      const url = `${host}/api/public/live?${query}`
      groups.set(url, [...(groups.get(url) || []), el])
      if (!el.hasAttribute('data-svc-state')) el.setAttribute('data-svc-state', 'loading')
    })
    groups.forEach((els, url) =>
      fetch(url)
        .then((r) => (r.status === 404 ? null : r.ok ? r.json() : Promise.reject()))
        .then(
          (body) =>
            els.forEach((el) => {
              if (!body) return el.setAttribute('data-svc-state', 'off')
              const metric = el.getAttribute('data-svc-range') ? el.getAttribute('data-svc-metric') || 'visitors' : 'visitors'
              el.textContent = Number(body[metric] ?? 0).toLocaleString()
              el.setAttribute('data-svc-state', 'ok')
            }),
          () => els.forEach((el) => el.setAttribute('data-svc-state', 'error')),
        ),
    )
    timer = setTimeout(tick, seconds * 1000)
  }
  const tick = () => {
    clearTimeout(timer)
    if (d.visibilityState === 'visible') refresh()
  }
  d.addEventListener('visibilitychange', tick)
  if (d.readyState === 'loading') d.addEventListener('DOMContentLoaded', tick)
  else tick()
})(document)
